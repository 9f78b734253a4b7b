// Ingest: a document's validation, hashing, parsing, splitting, embedding and writing.

package kb

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/kb/chunk"
	"github.com/reelforge/reelforge/host/kb/parse"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/internal/backoff"
	"github.com/reelforge/reelforge/internal/segment"
	"github.com/reelforge/reelforge/sdk/errcode"
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
// Content that another ingest is indexing right now (the same text sent twice at once) is waited
// for, up to Options.SameContentWait, and then answered as what that ingest left: a duplicate of
// the indexed document, or, if it failed, ingested again in its place (ingestWaiting).
func (s *Service) Ingest(ctx context.Context, p IngestParams) (*IngestResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	p.fillDefaults()
	return s.ingestWaiting(ctx, p, time.Now().Add(s.opt.SameContentWait))
}

// ingestWaiting ingests p (validated, with its defaults). When the source holds p's content in a
// document that another ingest is still indexing, it waits for that ingest to end (awaitIngest, up
// to deadline) and tries again, so two ingests of one content at once write it once and both
// answer: the one that came second with a duplicate, as if it had been sent after.
func (s *Service) ingestWaiting(ctx context.Context, p IngestParams, deadline time.Time) (*IngestResult, error) {
	for {
		res, busy, err := s.ingestOnce(ctx, p)
		if busy == nil {
			return res, err
		}
		if err := s.awaitIngest(ctx, busy, deadline); err != nil {
			return nil, err
		}
	}
}

// ingestOnce is one attempt of an ingest of p (validated, with its defaults): its result, or busy,
// the document of the same content that another ingest is indexing (nothing done).
func (s *Service) ingestOnce(ctx context.Context, p IngestParams) (res *IngestResult, busy *store.KnowledgeDocument, err error) {
	nd, data := s.newDocument(p)
	// The document's chunks are made on other goroutines while AddDocument runs, so the
	// database's work (on PostgreSQL, another process) and the host's overlap; a duplicate stops
	// them. The target: ingest of one document a call, BENCHMARKS.md (knowledge).
	chunks := s.startChunks(ctx, p, data)
	added, err := s.st.AddDocument(ctx, nd.Source, nd.Document)
	if err != nil {
		chunks.stop()
		return nil, nil, fmt.Errorf("kb: add document: %w", err)
	}
	if busy := beingIndexed(added); busy != nil {
		chunks.stop()
		return nil, busy, nil
	}
	res, done := s.added(added)
	if done {
		chunks.stop()
		return res, nil, nil
	}
	n, doc, ingestErr := s.index(ctx, added.Source, nd.Document, chunks)
	res, err = s.finishIngest(ctx, res, nd.Document.ID, n, doc, ingestErr)
	return res, nil, err
}

// beingIndexed is the document AddDocument found of the same content when another ingest is
// still at work on it (a duplicate not indexed yet: its host lives and renews its lease), or nil.
func beingIndexed(added *store.AddDocumentResult) *store.KnowledgeDocument {
	if added.Duplicate && added.Document.ParseStatus != store.DocIndexed {
		return added.Document
	}
	return nil
}

// awaitIngest waits until doc, which another ingest is indexing, is no longer uploading or
// parsing (indexed, failed, or deleted), reading it at growing intervals. An ingest of a batch of
// 100 short texts takes a few seconds, so the default wait (DefaultSameContentWait) outlasts any
// ordinary one; past deadline the answer is a 409 saying the content is still being indexed (its
// other ingest is stuck, or its host died and its lease has not run out yet).
func (s *Service) awaitIngest(ctx context.Context, doc *store.KnowledgeDocument, deadline time.Time) error {
	pause := 20 * time.Millisecond
	for {
		wait := min(pause, time.Until(deadline))
		if wait <= 0 {
			return errcode.Newf(errcode.Validation, "the same content is still being indexed as document %s (%s): retry when it is indexed",
				doc.ID, doc.ParseStatus).WithStatus(409)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		cur, err := s.st.GetDocument(ctx, doc.ID)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("kb: wait for document %s: %w", doc.ID, err)
		}
		if cur.ParseStatus != store.DocUploading && cur.ParseStatus != store.DocParsing {
			return nil
		}
		doc = cur
		pause = min(2*pause, 500*time.Millisecond)
	}
}

// pendingChunks are the chunks of one document being made (startChunks).
type pendingChunks struct {
	cancel context.CancelFunc
	done   chan struct{}
	chunks []store.KnowledgeChunk
	err    error
}

// startChunks parses, splits and embeds a document on other goroutines (makeChunks, on every
// core), before its document row exists: the chunks have no source or document yet (own).
func (s *Service) startChunks(ctx context.Context, p IngestParams, data []byte) *pendingChunks {
	ctx, cancel := context.WithCancel(ctx)
	pc := &pendingChunks{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(pc.done)
		pc.chunks, pc.err = s.makeChunks(ctx, p, data, runtime.GOMAXPROCS(0))
	}()
	return pc
}

// wait returns the chunks once made.
func (pc *pendingChunks) wait() ([]store.KnowledgeChunk, error) {
	<-pc.done
	pc.cancel()
	return pc.chunks, pc.err
}

// stop abandons the chunks: their goroutines stop at the next chunk, and stop waits for them.
func (pc *pendingChunks) stop() {
	pc.cancel()
	<-pc.done
}

// newDocument is the document record of p (filled with its defaults) and p's content: it starts
// in parsing, held by this service's holder.
func (s *Service) newDocument(p IngestParams) (store.NewDocument, []byte) {
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
	// A client that sends no type or the generic one (Go's multipart writer always, curl for .md)
	// gets the type the file is read as: parsing goes by the extension.
	if p.IsFile && (mime == "" || mime == "application/octet-stream") {
		if t := parse.MimeType(filename); t != "" {
			mime = t
		}
	}
	doc := &store.KnowledgeDocument{ID: timeOrderedID(), UserID: p.UserID, Title: title, Filename: filename,
		FileHash: hex.EncodeToString(sum[:]), FileSize: int64(len(data)), MimeType: mime, Metadata: p.Metadata,
		// The content is in hand: the document starts in parsing, one commit fewer than
		// uploading and then parsing (a document taken over by a retry starts in uploading).
		ParseStatus: store.DocParsing}
	if s.opt.Holder != "" {
		doc.HeldBy, doc.Lease = s.opt.Holder, s.opt.Lease
	}
	return store.NewDocument{Source: store.NewSourceParams{ID: uuid.NewString(), CreatedBy: p.UserID, ProjectID: p.ProjectID,
		Name: p.SourceName, Visibility: p.Visibility, Internal: p.Internal}, Document: doc}, data
}

// added is the outcome of AddDocument for an ingest (not beingIndexed): done when there is nothing
// to index (a duplicate of an indexed document: its result); otherwise the result to complete
// with finishIngest.
func (s *Service) added(added *store.AddDocumentResult) (res *IngestResult, done bool) {
	res = &IngestResult{Document: added.Document, Source: added.Source, Duplicate: added.Duplicate}
	if added.Duplicate {
		res.ChunksCount = added.Document.ChunkCount
		return res, true
	}
	if added.Retry {
		s.log.Info("kb: ingesting again a document left failed or unfinished", "document", added.Document.ID)
	}
	return res, false
}

// finishIngest ends the ingest of document docID that wrote n chunks and left the document as
// doc, or failed with ingestErr: a failure is kept on the document (failed, with its public
// reason), and the result carries the document as stored (doc, or read again after a failure).
func (s *Service) finishIngest(ctx context.Context, res *IngestResult, docID string, n int, doc *store.KnowledgeDocument, ingestErr error) (*IngestResult, error) {
	if ingestErr != nil && !errors.Is(ingestErr, store.ErrConflict) {
		if e := errcode.As(ingestErr); e == nil || e.Code != errcode.Validation {
			s.log.Warn("kb: ingest failed", "document", docID, "err", ingestErr)
		}
		err := s.st.SetDocumentStatus(context.WithoutCancel(ctx), store.DocumentStatusParams{ID: docID, Status: store.DocFailed, Error: publicReason(ingestErr)})
		if errors.Is(err, store.ErrConflict) {
			ingestErr = err
		} else if err != nil {
			// The database failed under the ingest (a full disk): the document would stay
			// "parsing" under this host's lease, renewed as long as the host lives, and block
			// every ingest of the same content. Its failure is recorded once the database takes
			// writes again.
			go s.markFailedLater(context.WithoutCancel(ctx), docID, publicReason(ingestErr))
			return nil, fmt.Errorf("kb: mark failed: %w", err)
		}
	}
	res.ChunksCount = n
	if doc == nil || ingestErr != nil {
		var err error
		if doc, err = s.st.GetDocument(ctx, docID); err != nil {
			return nil, fmt.Errorf("kb: reload document: %w", err)
		}
	}
	res.Document = doc
	if errors.Is(ingestErr, store.ErrConflict) {
		// Another ingest of the same file (one this upload took over as abandoned, still alive
		// after all) indexed the document first: this one is a duplicate of it.
		res.Duplicate, res.ChunksCount = true, res.Document.ChunkCount
	}
	return res, nil
}

// markFailedLater records the failure of document id's ingest, trying with the host's back-off
// until it is recorded or the document is no longer being ingested (deleted, or settled by another
// host once this one's lease lapsed: ErrNotFound, ErrConflict).
func (s *Service) markFailedLater(ctx context.Context, id, reason string) {
	retry := backoff.Retry{Log: s.log, What: "kb: record a failed ingest"}
	for {
		err := s.st.SetDocumentStatus(ctx, store.DocumentStatusParams{ID: id, Status: store.DocFailed, Error: reason})
		if err == nil || errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrConflict) {
			retry.Succeeded()
			return
		}
		if !backoff.Sleep(ctx, retry.Failed(err, "document", id)) {
			return
		}
	}
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

// index writes one document from its pending chunks; it returns the chunk count and the
// document as the write left it.
func (s *Service) index(ctx context.Context, src *store.KnowledgeSource, doc *store.KnowledgeDocument, pc *pendingChunks) (int, *store.KnowledgeDocument, error) {
	if err := s.toParsing(ctx, doc); err != nil {
		pc.stop()
		return 0, nil, err
	}
	chunks, err := pc.wait()
	if err == nil {
		err = s.embedRemote(ctx, chunks)
	}
	if err != nil {
		return 0, nil, err
	}
	own(chunks, src, doc)
	written, err := s.writeOne(ctx, store.WriteChunksParams{DocumentID: doc.ID, Chunks: chunks})
	if err != nil {
		return 0, nil, err
	}
	return len(chunks), written, nil
}

// prepare parses, splits and embeds one document (no write but its status, when it is not in
// parsing already): the chunks to write.
func (s *Service) prepare(ctx context.Context, src *store.KnowledgeSource, doc *store.KnowledgeDocument, p IngestParams, data []byte) ([]store.KnowledgeChunk, error) {
	if err := s.toParsing(ctx, doc); err != nil {
		return nil, err
	}
	chunks, err := s.makeChunks(ctx, p, data, 1)
	if err == nil {
		err = s.embedRemote(ctx, chunks)
	}
	if err != nil {
		return nil, err
	}
	own(chunks, src, doc)
	return chunks, nil
}

// toParsing moves a document that is not in parsing (one taken over by a retry starts in
// uploading) to parsing.
func (s *Service) toParsing(ctx context.Context, doc *store.KnowledgeDocument) error {
	if doc.ParseStatus == store.DocParsing {
		return nil
	}
	return s.st.SetDocumentStatus(ctx, store.DocumentStatusParams{ID: doc.ID, Status: store.DocParsing})
}

// own sets the source and document of chunks made before the document row existed (a retry
// takes over an earlier document's id).
func own(chunks []store.KnowledgeChunk, src *store.KnowledgeSource, doc *store.KnowledgeDocument) {
	for i := range chunks {
		chunks[i].SourceID, chunks[i].DocumentID = src.ID, doc.ID
	}
}

// makeChunks parses, splits and, with the local embedder, embeds a document on up to workers
// goroutines (a share of its chunks each): its chunks, without source or document (own), and
// without the vectors of a remote embedder (embedRemote).
func (s *Service) makeChunks(ctx context.Context, p IngestParams, data []byte, workers int) ([]store.KnowledgeChunk, error) {
	text := p.Text
	if p.IsFile {
		var err error
		if text, err = parse.Text(p.Filename, data); err != nil {
			return nil, err
		}
	}
	if strings.TrimSpace(text) == "" {
		return nil, errcode.New(errcode.Validation, "the document contains no text")
	}
	parts := chunk.Split(text, p.Chunk)
	if len(parts) == 0 {
		return nil, errcode.New(errcode.Validation, "the document contains no text")
	}
	chunks := make([]store.KnowledgeChunk, len(parts))
	for i := range chunks {
		chunks[i].ID = timeOrderedID() // in chunk order, whichever share makes the chunk
	}
	// The local embedder works on the same tokens as the keyword index: segment each chunk once
	// and give the tokens to both.
	local, _ := s.emb.(tokenEmbedder)
	model := s.emb.Model()
	fill := func(from, to int) error {
		var sb strings.Builder
		for i := from; i < to; i++ {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			c := parts[i]
			full := withHeading(c.Text, c.Heading)
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
			chunks[i] = store.KnowledgeChunk{ID: chunks[i].ID, Index: c.Index, Text: c.Text, Heading: c.Heading,
				TokenCount: n, SearchText: sb.String(), Metadata: p.Metadata, EmbeddingModel: model}
			if local != nil {
				chunks[i].Embedding = local.VectorOf(toks)
			}
		}
		return nil
	}
	if err := inShares(len(parts), workers, fill); err != nil {
		return nil, err
	}
	return chunks, nil
}

// embedRemote gives chunks the vectors of a remote embedder (none to give with the local one,
// which makeChunks applied). It runs once the document is known not to be a duplicate: Ingest
// makes a document's chunks while AddDocument runs, and a remote embedder's calls are paid for.
func (s *Service) embedRemote(ctx context.Context, chunks []store.KnowledgeChunk) error {
	if _, local := s.emb.(tokenEmbedder); local {
		return nil
	}
	texts := make([]string, len(chunks))
	for i, c := range chunks {
		texts[i] = withHeading(c.Text, c.Heading)
	}
	vecs, err := s.embedAll(ctx, texts)
	if err != nil {
		return err
	}
	for i := range chunks {
		chunks[i].Embedding = vecs[i]
	}
	return nil
}

// inShares runs f over [0, n) in up to workers contiguous shares at once, the first on the calling
// goroutine, and returns the first error.
func inShares(n, workers int, f func(from, to int) error) error {
	workers = max(1, min(workers, n))
	if workers == 1 {
		return f(0, n)
	}
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := 1; w < workers; w++ {
		wg.Go(func() { errs[w] = f(w*n/workers, (w+1)*n/workers) })
	}
	errs[0] = f(0, n/workers)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// writeOne writes the chunks of one document in one transaction and remembers their vectors: the
// document as the write left it.
func (s *Service) writeOne(ctx context.Context, p store.WriteChunksParams) (*store.KnowledgeDocument, error) {
	doc, err := s.st.WriteChunks(ctx, p)
	s.changed()
	if err != nil {
		return nil, err
	}
	s.rememberChunks(p)
	return doc, nil
}

// write writes the chunks of one or more documents in one transaction and remembers their
// vectors; it returns the documents as the write left them, in no particular order.
func (s *Service) write(ctx context.Context, docs ...store.WriteChunksParams) ([]*store.KnowledgeDocument, error) {
	if len(docs) == 1 {
		doc, err := s.writeOne(ctx, docs[0])
		if err != nil {
			return nil, err
		}
		return []*store.KnowledgeDocument{doc}, nil
	}
	written, err := s.st.WriteChunksBatch(ctx, docs)
	s.changed()
	if err != nil {
		return nil, err
	}
	for _, d := range docs {
		s.rememberChunks(d)
	}
	return written, nil
}

// rememberChunks keeps the vectors of a document's chunks written in the vector cache.
func (s *Service) rememberChunks(d store.WriteChunksParams) {
	ids := make([]string, len(d.Chunks))
	vecs := make([][]float32, len(d.Chunks))
	for i, c := range d.Chunks {
		ids[i], vecs[i] = c.ID, c.Embedding
	}
	s.remember(s.emb.Model(), ids, vecs)
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
