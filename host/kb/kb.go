package kb

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/kb/chunk"
	"github.com/reelforge/reelforge/host/kb/embed"
	"github.com/reelforge/reelforge/host/kb/llm"
	"github.com/reelforge/reelforge/host/kb/parse"
	"github.com/reelforge/reelforge/host/kb/rank"
	"github.com/reelforge/reelforge/host/kb/segment"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// Store is what the service needs of the database.
type Store interface {
	store.Knowledge
	SupportsVectorSearch() bool
	ParallelWrites() bool
}

// Options configure the service; zero values take the defaults.
type Options struct {
	Embedder      embed.Embedder // nil: the local embedder
	Chat          *llm.Client    // nil: no language model (extractive answers, no rerank)
	AskModel      string         // KB_ASK_MODEL
	RerankOn      bool           // KB_RERANK_ENABLED
	RerankModel   string         // KB_RERANK_MODEL
	RerankTimeout time.Duration  // 0: 5 s
	MinScore      float64        // KB_MIN_SCORE: vector floor of hits sharing no term (at least rank.Floor)
	Candidates    int            // per leg of the in-memory path; 0: 100
	Logger        *slog.Logger
	// Holder names the host life that ingests (documents it adds are held by it under a lease of
	// Lease, which the host renews: see store.Knowledge.RenewDocumentLeases). Empty: documents are
	// held by nobody and only IngestStale frees one whose ingest died.
	Holder string
	Lease  time.Duration
}

// Service is the knowledge base: ingest, search, ask, audit, eval and facts. It is safe for
// concurrent use.
type Service struct {
	st   Store
	emb  embed.Embedder
	opt  Options
	log  *slog.Logger
	mu   sync.RWMutex
	vecs map[vecKey][]float32  // decoded vectors (chunks never change in place)
	gen  uint64                // bumped by every write of this service
	refs map[string]*refsEntry // viewer -> readable embedded chunks, for refsTTL or until gen moves
}

type vecKey struct{ chunkID, model string }

// refsTTL bounds how long a viewer's list of readable chunks is reused: writes of this process
// invalidate it at once, those of other hosts sharing the database within refsTTL.
const refsTTL = 2 * time.Second

type refsEntry struct {
	gen  uint64
	at   time.Time
	refs []store.EmbeddingRef
	set  *vecSet // the vectors of refs, resolved by the first search that needs them
}

// vecSet is the readable vectors of one model, in one slice, so a search scans them without map
// lookups. It shares the vectors with the decoded cache; there is one per cached viewer, so it
// holds no more than that (no index by id: the keyword candidates use the decoded cache).
type vecSet struct {
	model string
	ids   []string
	vecs  [][]float32
}

// changed invalidates the cached lists of readable chunks.
func (s *Service) changed() {
	s.mu.Lock()
	s.gen++
	s.refs = map[string]*refsEntry{}
	s.mu.Unlock()
}

// embeddingRefs returns the chunks v may read with their models, from the short-lived cache.
func (s *Service) embeddingRefs(ctx context.Context, v store.Viewer) (*refsEntry, error) {
	key := fmt.Sprintf("%s|%t|%s|%s|%q|%q", v.UserID, v.Admin, v.ProjectID, v.SourceID, v.SourceNames, v.DocumentIDs)
	s.mu.RLock()
	e, ok := s.refs[key]
	gen := s.gen
	s.mu.RUnlock()
	if ok && e.gen == gen && time.Since(e.at) < refsTTL {
		return e, nil
	}
	refs, err := s.st.EmbeddingRefs(ctx, v)
	if err != nil {
		return nil, err
	}
	e = &refsEntry{gen: gen, at: time.Now(), refs: refs}
	s.mu.Lock()
	if s.gen == gen {
		if len(s.refs) > 1000 {
			s.refs = map[string]*refsEntry{}
		}
		s.refs[key] = e
	}
	s.mu.Unlock()
	return e, nil
}

// vectors resolves the vectors of e's chunks of model, from the decoded cache or the store.
func (s *Service) vectors(ctx context.Context, e *refsEntry, model string) (*vecSet, error) {
	s.mu.RLock()
	set := e.set
	s.mu.RUnlock()
	if set != nil && set.model == model {
		return set, nil
	}
	set = &vecSet{model: model}
	var missing []store.EmbeddingRef
	s.mu.RLock()
	for _, r := range e.refs {
		if r.Model != model {
			continue
		}
		if vec, ok := s.vecs[vecKey{r.ChunkID, r.Model}]; ok {
			set.ids = append(set.ids, r.ChunkID)
			set.vecs = append(set.vecs, vec)
		} else {
			missing = append(missing, r)
		}
	}
	s.mu.RUnlock()
	if len(missing) > 0 {
		got, err := s.st.Embeddings(ctx, missing)
		if err != nil {
			return nil, fmt.Errorf("kb: load embeddings: %w", err)
		}
		s.mu.Lock()
		for _, r := range missing {
			if vec, ok := got[r.ChunkID]; ok {
				s.vecs[vecKey{r.ChunkID, model}] = vec
				set.ids = append(set.ids, r.ChunkID)
				set.vecs = append(set.vecs, vec)
			}
		}
		s.mu.Unlock()
	}
	s.mu.Lock()
	e.set = set
	s.mu.Unlock()
	return set, nil
}

// remember puts vectors this service has just written into the decoded cache, so the next
// search does not load them back from the store.
func (s *Service) remember(model string, ids []string, vecs [][]float32) {
	s.mu.Lock()
	for i, id := range ids {
		if vecs[i] != nil {
			s.vecs[vecKey{id, model}] = vecs[i]
		}
	}
	s.mu.Unlock()
}

// New returns the service over st.
func New(st Store, opt Options) *Service {
	if opt.Embedder == nil {
		opt.Embedder = embed.NewLocal()
	}
	if opt.RerankTimeout <= 0 {
		opt.RerankTimeout = 5 * time.Second
	}
	if opt.MinScore < rank.Floor {
		opt.MinScore = rank.Floor
	}
	if opt.Candidates <= 0 {
		opt.Candidates = 100
	}
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{st: st, emb: opt.Embedder, opt: opt, log: log, vecs: map[vecKey][]float32{}, refs: map[string]*refsEntry{}}
}

// Embedder returns the embedder new chunks are embedded with.
func (s *Service) Embedder() embed.Embedder { return s.emb }

// Field limits of the knowledge routes.
const (
	MaxTitleLen      = 500
	MaxSourceNameLen = 200
	MaxTextLen       = 5 << 20
	MaxQueryLen      = 2000
	MaxNotesLen      = 2000
	MaxTopK          = 50
	DefaultTopK      = 5
	DefaultSource    = "default"
	embedBatch       = 64
	reindexBatch     = 512 // chunks re-embedded and written per transaction by Reindex
)

// IngestParams describe one document to ingest: Text for a text, or Filename and Data for a file.
type IngestParams struct {
	UserID     string
	ProjectID  string // checked by the caller (access.Project)
	SourceName string // "" means "default"
	Visibility string // private, project or org; "" means project
	Title      string
	Text       string
	Filename   string
	MimeType   string
	Data       []byte
	IsFile     bool
	Chunk      chunk.Options // zero: 1000/180
	Metadata   json.RawMessage
	Internal   bool // mark the source internal: it answers questions but is never used in generated content
}

// fillDefaults sets the source name and visibility an ingest takes when they are not given.
func (p *IngestParams) fillDefaults() {
	if p.SourceName == "" {
		p.SourceName = DefaultSource
	}
	if p.Visibility == "" {
		p.Visibility = store.VisibilityProject
	}
}

// content is what is ingested: the file's bytes or the text's.
func (p *IngestParams) content() []byte {
	if p.IsFile {
		return p.Data
	}
	return []byte(p.Text)
}

// IngestResult is the outcome of an ingest.
type IngestResult struct {
	Document    *store.KnowledgeDocument
	Source      *store.KnowledgeSource
	ChunksCount int
	Duplicate   bool
}

// ValidVisibility checks a visibility value ("" is allowed and means project).
func ValidVisibility(v string) error {
	switch v {
	case "", store.VisibilityPrivate, store.VisibilityProject, store.VisibilityOrg:
		return nil
	}
	return errcode.Invalid("visibility", "must be private, project or org")
}

// Validate checks the fields of p that do not need the database.
func (p *IngestParams) Validate() error {
	if !p.IsFile {
		if strings.TrimSpace(p.Text) == "" {
			return errcode.Invalid("text", "is required")
		}
		if len(p.Text) > MaxTextLen {
			return errcode.Invalid("text", fmt.Sprintf("must be at most %d bytes", MaxTextLen)).WithStatus(413)
		}
	} else if !parse.Supported(p.Filename) {
		ext := strings.ToLower(strings.TrimPrefix(extOf(p.Filename), "."))
		if ext == "" {
			ext = "(none)"
		}
		return errcode.New(errcode.Validation, fmt.Sprintf("unsupported file type %q: supported are txt, md, json, csv, html, pdf, docx", ext)).
			WithDetails([]errcode.FieldError{{Field: "file", Problem: "unsupported file type " + ext}})
	}
	if utf8.RuneCountInString(p.Title) > MaxTitleLen {
		return errcode.Invalid("title", fmt.Sprintf("must be at most %d characters", MaxTitleLen))
	}
	if utf8.RuneCountInString(p.SourceName) > MaxSourceNameLen {
		return errcode.Invalid("source_name", fmt.Sprintf("must be at most %d characters", MaxSourceNameLen))
	}
	if err := ValidVisibility(p.Visibility); err != nil {
		return err
	}
	if p.Chunk == (chunk.Options{}) {
		p.Chunk = chunk.Default()
	}
	return p.Chunk.Validate()
}

func extOf(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 && !strings.ContainsAny(name[i:], `/\`) {
		return name[i:]
	}
	return ""
}

// Ingest stores a document: hash (de-duplication per source), parse, split, embed in batches, and
// chunks and embeddings written in one transaction. The document goes uploading -> parsing ->
// indexed, or failed with its reason (a file with no text is not an error: the document is failed).
func (s *Service) Ingest(ctx context.Context, p IngestParams) (*IngestResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	p.fillDefaults()
	data := p.content()
	sum := sha256.Sum256(data)
	filename := p.Filename
	if filename == "" {
		filename = "text.txt"
	}
	title := p.Title
	if title == "" {
		title = filename
		if !p.IsFile {
			title = firstLine(p.Text, 80)
		}
	}
	mime := p.MimeType
	if mime == "" && !p.IsFile {
		mime = "text/plain"
	}
	doc := &store.KnowledgeDocument{ID: timeOrderedID(), UserID: p.UserID, Title: title, Filename: filename,
		FileHash: hex.EncodeToString(sum[:]), FileSize: int64(len(data)), MimeType: mime, Metadata: p.Metadata,
		// The content is in hand: the document starts in parsing, one commit fewer than
		// uploading and then parsing (a document taken over by a retry starts in uploading).
		ParseStatus: store.DocParsing}
	if s.opt.Holder != "" {
		until := time.Now().Add(s.opt.Lease)
		doc.HeldBy, doc.LeaseUntil = s.opt.Holder, &until
	}
	added, err := s.st.AddDocument(ctx, store.NewSourceParams{ID: uuid.NewString(), CreatedBy: p.UserID, ProjectID: p.ProjectID,
		Name: p.SourceName, Visibility: p.Visibility, Internal: p.Internal}, doc)
	if err != nil {
		return nil, fmt.Errorf("kb: add document: %w", err)
	}
	res := &IngestResult{Document: added.Document, Source: added.Source, Duplicate: added.Duplicate}
	if added.Duplicate {
		if added.Document.ParseStatus != store.DocIndexed {
			// Not a duplicate of something searchable: the earlier ingest of the same content is
			// still at work (its host lives and renews its lease). Say so rather than answer as if
			// the write were done.
			return nil, errcode.Newf(errcode.Validation, "the same content is still being indexed as document %s (%s): retry when it is indexed",
				added.Document.ID, added.Document.ParseStatus).WithStatus(409)
		}
		res.ChunksCount = added.Document.ChunkCount
		return res, nil
	}
	if added.Retry {
		s.log.Info("kb: ingesting again a document left failed or unfinished", "document", doc.ID)
	}
	n, ingestErr := s.index(ctx, added.Source, doc, p, data)
	if ingestErr != nil && !errors.Is(ingestErr, store.ErrConflict) {
		if e := errcode.As(ingestErr); e == nil || e.Code != errcode.Validation {
			s.log.Warn("kb: ingest failed", "document", doc.ID, "err", ingestErr)
		}
		err := s.st.SetDocumentStatus(context.WithoutCancel(ctx), doc.ID, store.DocFailed, publicReason(ingestErr))
		if errors.Is(err, store.ErrConflict) {
			ingestErr = err
		} else if err != nil {
			return nil, fmt.Errorf("kb: mark failed: %w", err)
		}
	}
	res.ChunksCount = n
	if res.Document, err = s.st.GetDocument(ctx, doc.ID); err != nil {
		return nil, fmt.Errorf("kb: reload document: %w", err)
	}
	if errors.Is(ingestErr, store.ErrConflict) {
		// Another ingest of the same file (one this upload took over as abandoned, still alive
		// after all) indexed the document first: this one is a duplicate of it.
		res.Duplicate, res.ChunksCount = true, res.Document.ChunkCount
	}
	return res, nil
}

// publicReason is the reason kept on a failed document: the public message of a catalogue error,
// a generic one otherwise.
func publicReason(err error) string {
	if e := errcode.As(err); e != nil && e.Msg != "" {
		return e.Msg
	}
	return "indexing failed"
}

func firstLine(text string, max int) string {
	text = strings.TrimSpace(text)
	if i := strings.IndexByte(text, '\n'); i >= 0 {
		text = text[:i]
	}
	if r := []rune(strings.TrimSpace(text)); len(r) > max {
		return string(r[:max])
	}
	return strings.TrimSpace(text)
}

// index parses, splits, embeds and writes one document; it returns the chunk count.
func (s *Service) index(ctx context.Context, src *store.KnowledgeSource, doc *store.KnowledgeDocument, p IngestParams, data []byte) (int, error) {
	if doc.ParseStatus != store.DocParsing {
		if err := s.st.SetDocumentStatus(ctx, doc.ID, store.DocParsing, ""); err != nil {
			return 0, err
		}
	}
	text := p.Text
	if p.IsFile {
		var err error
		if text, err = parse.Text(p.Filename, data); err != nil {
			return 0, err
		}
	}
	if strings.TrimSpace(text) == "" {
		return 0, errcode.New(errcode.Validation, "the document contains no text")
	}
	parts := chunk.Split(text, p.Chunk)
	if len(parts) == 0 {
		return 0, errcode.New(errcode.Validation, "the document contains no text")
	}
	chunks := make([]store.KnowledgeChunk, len(parts))
	texts := make([]string, len(parts))
	// The local embedder works on the same tokens as the keyword index: segment each chunk once
	// and give the tokens to both.
	local, _ := s.emb.(tokenEmbedder)
	var sb strings.Builder
	for i, c := range parts {
		if i%64 == 0 && ctx.Err() != nil {
			return 0, ctx.Err()
		}
		full := withHeading(c.Text, c.Heading)
		texts[i] = full
		toks := segment.Tokens(full)
		sb.Reset()
		sb.Grow(len(full) + len(full)/4)
		n := 0
		for _, t := range toks {
			if t.Stop {
				continue
			}
			if n > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(t.Text)
			n++
		}
		chunks[i] = store.KnowledgeChunk{ID: timeOrderedID(), SourceID: src.ID, DocumentID: doc.ID, Index: c.Index,
			Text: c.Text, Heading: c.Heading, TokenCount: n, SearchText: sb.String(),
			Metadata: p.Metadata, EmbeddingModel: s.emb.Model()}
		if local != nil {
			chunks[i].Embedding = local.VectorOf(toks)
		}
	}
	if local == nil {
		vecs, err := s.embedAll(ctx, texts)
		if err != nil {
			return 0, err
		}
		for i := range chunks {
			chunks[i].Embedding = vecs[i]
		}
	}
	err := s.st.WriteChunks(ctx, store.WriteChunksParams{DocumentID: doc.ID, Chunks: chunks})
	s.changed()
	if err != nil {
		return 0, err
	}
	ids := make([]string, len(chunks))
	vecs := make([][]float32, len(chunks))
	for i, c := range chunks {
		ids[i], vecs[i] = c.ID, c.Embedding
	}
	s.remember(s.emb.Model(), ids, vecs)
	return len(chunks), nil
}

// timeOrderedID is a new document or chunk id: a UUID of version 7, which starts with the time.
// Random ids (version 4) put every new chunk at a random place of the primary key indexes of
// chunks and embeddings, so an ingest dirtied a page of each per chunk; ids that grow with time
// are appended at the end of those indexes.
func timeOrderedID() string { return uuid.Must(uuid.NewV7()).String() } // panics as uuid.NewString does

// withHeading is a chunk's text led by its heading when the text does not hold it already: what is
// embedded and keyword-indexed of the chunk, and the fragment an ask gives the language model.
func withHeading(text, heading string) string {
	if heading != "" && !strings.Contains(text, heading) {
		return heading + "\n" + text
	}
	return text
}

// tokenEmbedder is an embedder that can embed a text from its segment.Tokens (embed.Local).
type tokenEmbedder interface {
	VectorOf(toks []segment.Token) []float32
}

// embedAll embeds texts in batches.
func (s *Service) embedAll(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for i := 0; i < len(texts); i += embedBatch {
		vs, err := s.emb.Embed(ctx, texts[i:min(len(texts), i+embedBatch)])
		if err != nil {
			return nil, fmt.Errorf("kb: embed: %w", err)
		}
		out = append(out, vs...)
	}
	return out, nil
}

// SearchParams is one search.
type SearchParams struct {
	UserID      string
	Admin       bool
	ProjectID   string // checked by the caller
	Query       string
	TopK        int
	SourceNames []string
	DocumentIDs []string
	Metadata    map[string]string
	Log         bool // write a knowledge_queries row (mode search)
}

// Scores of a hit.
type Scores struct {
	Vector  float64 `json:"vector"`
	Keyword float64 `json:"keyword"`
	Total   float64 `json:"total"`
}

// Hit is one search result.
type Hit struct {
	ChunkID       string `json:"chunk_id"`
	ChunkText     string `json:"chunk_text"`
	Heading       string `json:"heading"`
	SourceName    string `json:"source_name"`
	SourceID      string `json:"source_id"`
	DocumentID    string `json:"document_id"`
	DocumentTitle string `json:"document_title"`
	ChunkIndex    int    `json:"chunk_index"`
	Scores        Scores `json:"scores"`

	meta json.RawMessage // the chunk's metadata, for the metadata filter
}

// Validate checks the query and top_k, defaulting top_k to 5.
func (p *SearchParams) Validate() error {
	if strings.TrimSpace(p.Query) == "" {
		return errcode.Invalid("query", "is required")
	}
	if utf8.RuneCountInString(p.Query) > MaxQueryLen {
		return errcode.Invalid("query", fmt.Sprintf("must be at most %d characters", MaxQueryLen))
	}
	if p.TopK == 0 {
		p.TopK = DefaultTopK
	}
	if p.TopK < 1 || p.TopK > MaxTopK {
		return errcode.Invalid("top_k", fmt.Sprintf("must be between 1 and %d", MaxTopK))
	}
	return nil
}

// Search runs SPEC.md rules 3 to 6 for the caller: the readable sources (in SQL), the query
// embedded, then the pgvector ranking or the in-memory hybrid over keyword candidates plus vector
// neighbours, the relevance floor, the filters and the optional rerank.
func (s *Service) Search(ctx context.Context, p SearchParams) ([]Hit, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	start := time.Now()
	hits, err := s.search(ctx, p)
	if err != nil {
		return nil, err
	}
	if p.Log {
		results, _ := json.Marshal(summarize(hits))
		q := &store.KnowledgeQuery{ID: uuid.NewString(), UserID: p.UserID, ProjectID: p.ProjectID, Mode: store.QuerySearch,
			QueryText: p.Query, TopK: p.TopK, LatencyMS: ms(time.Since(start)), Results: results, Cited: len(hits) > 0}
		if err := s.st.LogQuery(context.WithoutCancel(ctx), q); err != nil {
			s.log.Warn("kb: log search", "err", err)
		}
	}
	return hits, nil
}

// SearchFor is the entry point of the run engines (engine.Host.Search): a search with the
// visibility of userID (an admin when role is admin), optionally narrowed to a project the caller
// has already checked.
func (s *Service) SearchFor(ctx context.Context, userID, role, projectID, query string, topK int) ([]Hit, error) {
	return s.Search(ctx, SearchParams{UserID: userID, Admin: role == store.RoleAdmin, ProjectID: projectID, Query: query, TopK: topK})
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func (s *Service) search(ctx context.Context, p SearchParams) ([]Hit, error) {
	if len(segment.Informative(p.Query)) == 0 {
		// Only stop and question words ("what is it?", "这是什么？"): nothing to find.
		return []Hit{}, nil
	}
	viewer := store.Viewer{UserID: p.UserID, Admin: p.Admin, ProjectID: p.ProjectID, SourceNames: p.SourceNames, DocumentIDs: p.DocumentIDs}
	terms := segment.Query(p.Query)
	var qv []float32
	if vs, err := s.emb.Embed(ctx, []string{p.Query}); err != nil {
		s.log.Warn("kb: embed query; keyword leg only", "err", err)
	} else if len(vs) == 1 {
		qv = vs[0]
	}
	want := p.TopK
	if len(p.Metadata) > 0 {
		want = max(want*5, 50)
	}
	if s.opt.RerankOn && s.opt.Chat != nil {
		want = max(want, min(2*p.TopK, MaxTopK))
	}
	var hits []Hit
	if s.st.SupportsVectorSearch() && len(qv) > 0 {
		rows, err := s.st.VectorSearch(ctx, store.SearchParams{Viewer: viewer, Terms: terms, Vector: qv, Model: s.emb.Model(),
			Limit: want, Floor: s.opt.MinScore, Cap: s.opt.Candidates,
			Weights: store.FusionWeights{Vector: rank.SQLVectorWeight, Keyword: rank.SQLKeywordWeight}})
		if err != nil && !errors.Is(err, store.ErrNotSupported) {
			return nil, fmt.Errorf("kb: vector search: %w", err)
		}
		if err == nil {
			for _, r := range rows {
				hits = append(hits, hitOf(r, Scores{Vector: r.Vector, Keyword: r.Keyword, Total: r.Total}))
			}
			return s.finish(ctx, p, hits), nil
		}
	}
	hits, err := s.memorySearch(ctx, viewer, terms, qv, want)
	if err != nil {
		return nil, err
	}
	return s.finish(ctx, p, hits), nil
}

func hitOf(r store.ChunkRow, sc Scores) Hit {
	return Hit{ChunkID: r.ID, ChunkText: r.Text, Heading: r.Heading, SourceName: r.SourceName, SourceID: r.SourceID,
		DocumentID: r.DocumentID, DocumentTitle: r.DocumentTitle, ChunkIndex: r.Index, Scores: sc, meta: r.Metadata}
}

// memorySearch is rule 5 with the candidate rule of DESIGN.md: the keyword leg's best matches (by
// BM25, see bestByBM25) and the vector leg's nearest neighbours, scored together in memory.
func (s *Service) memorySearch(ctx context.Context, v store.Viewer, terms []string, qv []float32, want int) ([]Hit, error) {
	kw, err := s.st.KeywordCandidates(ctx, store.SearchParams{Viewer: v, Terms: terms, Limit: 2 * s.opt.Candidates})
	if err != nil {
		return nil, fmt.Errorf("kb: keyword candidates: %w", err)
	}
	split := map[string][]string{} // a candidate's terms, once split (indexTerms)
	if len(kw) > s.opt.Candidates {
		if kw, err = bestByBM25(ctx, s.st, terms, kw, s.opt.Candidates, split); err != nil {
			return nil, fmt.Errorf("kb: keyword candidates: %w", err)
		}
	}
	rows := map[string]store.ChunkRow{}
	order := make([]string, 0, len(kw)+s.opt.Candidates)
	for _, r := range kw {
		rows[r.ID] = r
		order = append(order, r.ID)
	}
	vecs := map[string][]float32{}
	if len(qv) > 0 {
		near, all, err := s.neighbours(ctx, v, qv, s.opt.Candidates, order)
		if err != nil {
			return nil, err
		}
		vecs = all
		var missing []string
		for _, id := range near {
			if _, ok := rows[id]; !ok {
				missing = append(missing, id)
				order = append(order, id)
			}
		}
		if len(missing) > 0 {
			more, err := s.st.ChunksByID(ctx, missing)
			if err != nil {
				return nil, fmt.Errorf("kb: load candidates: %w", err)
			}
			for _, r := range more {
				rows[r.ID] = r
			}
		}
	}
	cands := make([]rank.Candidate, 0, len(order))
	ids := make([]string, 0, len(order))
	for _, id := range order {
		r, ok := rows[id]
		if !ok {
			continue
		}
		ids = append(ids, id)
		ts, ok := split[id]
		if !ok {
			ts = indexTerms(r.SearchText)
		}
		cands = append(cands, rank.Candidate{ID: id, Terms: ts, Vector: vecs[id]})
	}
	scored := rank.Score(rank.Query{Terms: terms, Vector: qv}, cands, rank.Options{TopK: want, Floor: s.opt.MinScore})
	hits := make([]Hit, 0, len(scored))
	for _, h := range scored {
		hits = append(hits, hitOf(rows[ids[h.Index]], Scores{Vector: h.Vector, Keyword: h.Keyword, Total: h.Total}))
	}
	return hits, nil
}

// termStatser is the part of the store bestByBM25 needs (store.Knowledge.TermStats).
type termStatser interface {
	TermStats(ctx context.Context, terms []string) (docs int, df map[string]int, err error)
}

// bestByBM25 keeps the n best of rows (a store's keyword matches, twice as many as wanted) by
// rank.Keyword's BM25 with the whole index's statistics, best first. The store's own full-text
// rank only picks the rows to look at. Both give common terms no say: FTS5's bm25 gives a term
// held by half the chunks or more no weight, pgstore's keyword leg leaves such terms out, and
// both search only a query's rarer terms once they match many rows. So their best 100 leave out
// chunks that a query's common terms (single Chinese characters, say) put among BM25's best: on
// drcd, 13 of 100 candidates differed on SQLite, and MRR@10 fell below BM25's own (BENCHMARKS.md,
// ninth session). With twice the rows to choose from, the choice is BM25's. The terms of the rows
// kept are left in split, by chunk id, for the scoring that follows.
func bestByBM25(ctx context.Context, st termStatser, terms []string, rows []store.ChunkRow, n int, split map[string][]string) ([]store.ChunkRow, error) {
	docs, df, err := st.TermStats(ctx, terms)
	if err != nil {
		return nil, err
	}
	cands := make([]rank.Candidate, len(rows))
	for i, r := range rows {
		cands[i] = rank.Candidate{ID: r.ID, Terms: indexTerms(r.SearchText)}
	}
	score := rank.Keyword(terms, cands, rank.Options{Power: 1,
		Stats: rank.Stats{Docs: docs, DF: func(t string) int { return df[t] }}})
	order := make([]int, len(rows))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return score[order[a]] > score[order[b]] })
	out := make([]store.ChunkRow, 0, n)
	for _, i := range order[:n] {
		out = append(out, rows[i])
		split[rows[i].ID] = cands[i].Terms
	}
	return out, nil
}

// indexTerms splits a stored search text (segment.IndexForm: terms joined by single spaces)
// back into its terms. It gives what strings.Fields gives, without Fields' rune-by-rune path for
// non-ASCII text when the text can hold no separator but single spaces.
func indexTerms(searchText string) []string {
	if searchText == "" {
		return nil
	}
	if searchText[0] == ' ' || searchText[len(searchText)-1] == ' ' || strings.Contains(searchText, "  ") {
		return strings.Fields(searchText)
	}
	for i := 0; i < len(searchText); i++ {
		switch searchText[i] {
		// ASCII whitespace other than the space, and the lead bytes of every non-ASCII
		// whitespace rune (U+0085, U+00A0, U+1680, U+2000 to U+205F, U+3000).
		case '\t', '\n', '\v', '\f', '\r', 0xC2, 0xE1, 0xE2, 0xE3:
			return strings.Fields(searchText)
		}
	}
	return strings.Split(searchText, " ")
}

// neighbours returns the n readable chunks nearest to qv (by dot product of unit vectors), and
// the vectors of the given candidates (chunks the caller has read through the visibility rule)
// and of the neighbours, in the query's model, from the cache or the store.
func (s *Service) neighbours(ctx context.Context, v store.Viewer, qv []float32, n int, cands []string) ([]string, map[string][]float32, error) {
	e, err := s.embeddingRefs(ctx, v)
	if err != nil {
		return nil, nil, fmt.Errorf("kb: embedding refs: %w", err)
	}
	set, err := s.vectors(ctx, e, s.emb.Model())
	if err != nil {
		return nil, nil, err
	}
	// A query embeds to few non-zero numbers (the local embedder puts a short query in a few
	// dozen of 1536 buckets): summing only those, in index order, gives exactly the dense sum,
	// since the skipped products are zeros.
	var nz []int32
	for i, x := range qv {
		if x != 0 {
			nz = append(nz, int32(i))
		}
	}
	order := nearest(set.vecs, qv, nz, n)
	ids := make([]string, len(order))
	vecs := make(map[string][]float32, len(order)+len(cands))
	for i, k := range order {
		ids[i] = set.ids[k]
		vecs[ids[i]] = set.vecs[k]
	}
	// Every readable chunk of the model is in the decoded cache now (vectors loaded them).
	s.mu.RLock()
	for _, id := range cands {
		if vec, ok := s.vecs[vecKey{id, set.model}]; ok {
			vecs[id] = vec
		}
	}
	s.mu.RUnlock()
	return ids, vecs, nil
}

// parallelScan is the least number of vectors worth splitting over two goroutines.
const parallelScan = 4096

// nearest returns the indexes of the n vectors with the largest dot product with qv, best first,
// ties to the lower index; nz lists qv's non-zero dimensions. A large set is scanned in two
// halves at once when a second processor is there; the result is the same.
func nearest(vecs [][]float32, qv []float32, nz []int32, n int) []int {
	if len(vecs) < parallelScan || runtime.GOMAXPROCS(0) < 2 {
		top := newTopK(n)
		scan(top, vecs, 0, qv, nz)
		return top.sorted()
	}
	half := len(vecs) / 2
	a, b := newTopK(n), newTopK(n)
	var wg sync.WaitGroup
	wg.Go(func() { scan(b, vecs[half:], half, qv, nz) })
	scan(a, vecs[:half], 0, qv, nz)
	wg.Wait()
	// push expects increasing indexes (an equal score never displaces an earlier item): every
	// index of b is above a's, and b's own go in in order, as one scan would have pushed them.
	bi := b.sorted() // best first; b.dots is in the same order now
	byIndex := make([]int, len(bi))
	for j := range byIndex {
		byIndex[j] = j
	}
	sort.Slice(byIndex, func(x, y int) bool { return bi[byIndex[x]] < bi[byIndex[y]] })
	for _, j := range byIndex {
		a.push(bi[j], b.dots[j])
	}
	return a.sorted()
}

// scan pushes the dot products of vecs (numbered from base) into top.
func scan(top *topK, vecs [][]float32, base int, qv []float32, nz []int32) {
	sparse := len(nz) <= len(qv)/4
	for i, vec := range vecs {
		if len(vec) != len(qv) {
			continue
		}
		var dot float32
		if sparse {
			for _, k := range nz {
				dot += qv[k] * vec[k]
			}
		} else {
			dot = dotDense(qv, vec)
		}
		top.push(base+i, dot)
	}
}

// dotDense is the dot product summed in index order.
func dotDense(a, b []float32) float32 {
	b = b[:len(a)]
	var dot float32
	for i, x := range a {
		dot += x * b[i]
	}
	return dot
}

// topK keeps the n best scores seen, in a min-heap; ties keep the earlier item.
type topK struct {
	n    int
	idx  []int
	dots []float32
}

func newTopK(n int) *topK {
	return &topK{n: n, idx: make([]int, 0, n), dots: make([]float32, 0, n)}
}

// worse reports whether heap slot a ranks below slot b: a lower score, or the same score
// seen later.
func (t *topK) worse(a, b int) bool {
	return t.dots[a] < t.dots[b] || (t.dots[a] == t.dots[b] && t.idx[a] > t.idx[b])
}

func (t *topK) push(i int, dot float32) {
	if t.n <= 0 {
		return
	}
	if len(t.idx) < t.n {
		t.idx, t.dots = append(t.idx, i), append(t.dots, dot)
		for c := len(t.idx) - 1; c > 0; {
			p := (c - 1) / 2
			if !t.worse(c, p) {
				break
			}
			t.swap(c, p)
			c = p
		}
		return
	}
	// Items come in increasing i, so an equal score never displaces the root.
	if dot <= t.dots[0] {
		return
	}
	t.idx[0], t.dots[0] = i, dot
	t.down(0, len(t.idx))
}

func (t *topK) swap(a, b int) {
	t.idx[a], t.idx[b] = t.idx[b], t.idx[a]
	t.dots[a], t.dots[b] = t.dots[b], t.dots[a]
}

func (t *topK) down(p, n int) {
	for {
		c := 2*p + 1
		if c >= n {
			return
		}
		if c+1 < n && t.worse(c+1, c) {
			c++
		}
		if !t.worse(c, p) {
			return
		}
		t.swap(c, p)
		p = c
	}
}

// sorted returns the kept items best first (ties: earlier first), emptying the heap; t.dots is
// left in the same order.
func (t *topK) sorted() []int {
	out := make([]int, len(t.idx))
	for n := len(t.idx); n > 0; n-- {
		out[n-1] = t.idx[0]
		t.swap(0, n-1)
		t.down(0, n-1)
	}
	return out
}

// finish applies the metadata filter, the optional rerank and top_k.
func (s *Service) finish(ctx context.Context, p SearchParams, hits []Hit) []Hit {
	if len(p.Metadata) > 0 {
		kept := hits[:0]
		for _, h := range hits {
			if metaMatches(h.meta, p.Metadata) {
				kept = append(kept, h)
			}
		}
		hits = kept
	}
	if s.opt.RerankOn && s.opt.Chat != nil && len(hits) > 1 {
		docs := make([]string, len(hits))
		for i, h := range hits {
			docs[i] = h.ChunkText
		}
		order, err := llm.Rerank(ctx, s.opt.Chat, s.opt.RerankModel, p.Query, docs, s.opt.RerankTimeout)
		if err != nil {
			s.log.Warn("kb: rerank failed; hybrid order kept", "err", err)
		} else {
			re := make([]Hit, 0, len(hits))
			for _, i := range order {
				re = append(re, hits[i])
			}
			hits = re
		}
	}
	if len(hits) > p.TopK {
		hits = hits[:p.TopK]
	}
	for i := range hits {
		hits[i].Scores = Scores{Vector: round4(hits[i].Scores.Vector), Keyword: round4(hits[i].Scores.Keyword), Total: round4(hits[i].Scores.Total)}
	}
	if hits == nil {
		hits = []Hit{}
	}
	return hits
}

func round4(x float64) float64 {
	const f = 10000
	if x < 0 {
		return -float64(int64(-x*f+0.5)) / f
	}
	return float64(int64(x*f+0.5)) / f
}

func metaMatches(raw json.RawMessage, want map[string]string) bool {
	var m map[string]any
	if len(raw) == 0 || json.Unmarshal(raw, &m) != nil {
		return false
	}
	for k, v := range want {
		got, ok := m[k]
		if !ok {
			return false
		}
		if s, isStr := got.(string); isStr {
			if s != v {
				return false
			}
		} else if b, _ := json.Marshal(got); string(b) != v {
			return false
		}
	}
	return true
}

type hitSummary struct {
	ChunkID    string  `json:"chunk_id"`
	DocumentID string  `json:"document_id"`
	SourceName string  `json:"source_name"`
	Total      float64 `json:"total"`
}

func summarize(hits []Hit) []hitSummary {
	out := make([]hitSummary, len(hits))
	for i, h := range hits {
		out[i] = hitSummary{h.ChunkID, h.DocumentID, h.SourceName, h.Scores.Total}
	}
	return out
}
