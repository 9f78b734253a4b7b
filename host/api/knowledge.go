package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	gojson "github.com/goccy/go-json"
	"github.com/gofiber/fiber/v2"

	"github.com/reelforge/reelforge/host/auth"
	"github.com/reelforge/reelforge/host/kb"
	"github.com/reelforge/reelforge/host/kb/chunk"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/sdk/errcode"
)

func (s *Server) knowledgeRoutes(r fiber.Router) {
	g := r.Group("/knowledge", s.needKB)
	g.Post("/upload", s.kbUpload)
	g.Post("/text", s.kbText)
	g.Post("/batch/text", s.kbBatchText)
	g.Post("/search", s.kbSearch)
	g.Get("/search", s.kbSearchGet)
	g.Post("/ask", s.kbAsk)
	g.Post("/context", s.kbContext)
}

// knowledgeOperations declares the Knowledge family (typed: operations.go). Every operation
// first checks that the knowledge base is wired (needKB), before its input is read.
func (s *Server) knowledgeOperations(api huma.API) {
	const tag = "Knowledge"
	kb := []fiber.Handler{s.needKB}
	register(api, op{Method: "GET", Path: "/api/knowledge/sources", Tag: tag, Summary: "Sources the caller may read",
		Errors: []int{403}, Before: kb}, s.kbSources)
	register(api, op{Method: "GET", Path: "/api/knowledge/sources/{id}/documents", Tag: tag, Summary: "Documents of a source",
		Errors: []int{404}, Before: kb}, s.kbSourceDocuments)
	register(api, op{Method: "GET", Path: "/api/knowledge/documents", Tag: tag, Summary: "Documents the caller may read",
		Before: kb}, s.kbDocuments)
	register(api, op{Method: "GET", Path: "/api/knowledge/documents/{id}", Tag: tag, Summary: "A document with its parse status",
		Errors: []int{404}, Before: kb}, s.kbDocument)
	register(api, op{Method: "DELETE", Path: "/api/knowledge/documents/{id}", Tag: tag,
		Summary: "Delete a document with its chunks, vectors and keyword index", Errors: []int{404}, Before: kb,
		Desc: "A document of the caller's sources (an admin: any); anyone else's is 404. No search path finds it afterwards; " +
			"the source's version is raised."}, s.kbDeleteDocument)
	register(api, op{Method: "POST", Path: "/api/knowledge/feedback/{queryId}", Tag: tag,
		Summary: "Rate an answer (a second rating replaces the first)", Errors: []int{404}, Before: kb}, s.kbFeedback)
	register(api, op{Method: "GET", Path: "/api/knowledge/metrics", Tag: tag, Summary: "Ask totals, citation coverage, latency",
		Before: kb}, s.kbMetrics)
	register(api, op{Method: "GET", Path: "/api/knowledge/eval-set", Tag: tag, Summary: "The 40 evaluation questions",
		Before: kb}, s.kbEvalSet)
	register(api, op{Method: "POST", Path: "/api/knowledge/eval/run-search", Tag: tag,
		Summary: "Run the search evaluation (answers: also ask every question and score the answers)", Before: kb}, s.kbEvalRun)
	register(api, op{Method: "POST", Path: "/api/knowledge/facts", Tag: tag, Summary: "Set a fact", Status: 201,
		Before: kb}, s.kbPutFact)
	register(api, op{Method: "GET", Path: "/api/knowledge/facts", Tag: tag, Summary: "The caller's facts", Before: kb}, s.kbFacts)
	register(api, op{Method: "DELETE", Path: "/api/knowledge/facts/{id}", Tag: tag,
		Summary: "Delete one of the caller's facts (by id or key)", Errors: []int{404}, Before: kb}, s.kbDeleteFact)
	register(api, op{Method: "POST", Path: "/api/knowledge/reindex", Tag: tag,
		Summary: "Re-embed one of the caller's sources (an admin: any) with the current embedding model", Errors: []int{404}, Before: kb,
		Desc: "512 chunks per transaction; the new vectors go beside the old ones and the source switches at the end, " +
			"so search keeps working. Running it again after a failure is safe."}, s.kbReindex)
}

func (s *Server) needKB(c *fiber.Ctx) error {
	if s.KB == nil {
		return errcode.New(errcode.ResourceExhausted, "Knowledge base not available")
	}
	return c.Next()
}

// docView is a document as the API shows it: status is parse_status (DECISIONS.md).
type docView struct {
	*store.KnowledgeDocument
	Status     string `json:"status"`
	SourceName string `json:"source_name,omitempty"`
}

func viewDoc(d *store.KnowledgeDocument, sourceName string) docView {
	return docView{KnowledgeDocument: d, Status: d.ParseStatus, SourceName: sourceName}
}

func viewDocs(ds []store.KnowledgeDocument) []docView {
	out := make([]docView, len(ds))
	for i := range ds {
		out[i] = viewDoc(&ds[i], "")
	}
	return out
}

// viewer is what the caller of a typed handler may read of the knowledge base.
func viewer(ctx context.Context) store.Viewer {
	p := caller(ctx)
	return store.Viewer{UserID: p.UserID, Admin: p.IsAdmin()}
}

func ingestAnswer(c *fiber.Ctx, res *kb.IngestResult) error {
	status := fiber.StatusCreated
	if res.Duplicate || res.Document.ParseStatus != store.DocIndexed {
		status = fiber.StatusOK
	}
	return ok(c, status, fiber.Map{"document": viewDoc(res.Document, res.Source.Name), "chunks_count": res.ChunksCount,
		"duplicate": res.Duplicate, "source": res.Source})
}

// chunkOptions reads chunk_size and chunk_overlap (DECISIONS.md: 200..4000, 0..size/2).
func chunkOptions(size, overlap string) (chunk.Options, error) {
	o := chunk.Default()
	if size = strings.TrimSpace(size); size != "" {
		n, err := strconv.Atoi(size)
		if err != nil {
			return o, errcode.Invalid("chunk_size", "must be a whole number between 200 and 4000")
		}
		o.Size = n
		if o.Overlap > n/2 {
			o.Overlap = n / 2
		}
	}
	if overlap = strings.TrimSpace(overlap); overlap != "" {
		n, err := strconv.Atoi(overlap)
		if err != nil {
			return o, errcode.Invalid("chunk_overlap", "must be a whole number between 0 and chunk_size/2")
		}
		o.Overlap = n
	}
	return o, o.Validate()
}

func (s *Server) kbUpload(c *fiber.Ctx) error {
	fh, err := c.FormFile("file")
	if err != nil || fh == nil {
		return errcode.Invalid("file", "is required (multipart form field file)")
	}
	if fh.Size > int64(s.Config.UploadLimit) {
		return tooLarge()
	}
	opts, err := chunkOptions(c.FormValue("chunk_size"), c.FormValue("chunk_overlap"))
	if err != nil {
		return err
	}
	p := kb.IngestParams{UserID: principal(c).UserID, SourceName: c.FormValue("source_name"), Visibility: c.FormValue("visibility"),
		Title: c.FormValue("title"), Filename: fh.Filename, MimeType: fh.Header.Get(fiber.HeaderContentType), IsFile: true, Chunk: opts,
		Internal: c.FormValue("internal") == "true"}
	if err := p.Validate(); err != nil {
		return err
	}
	if err := mayPublish(principal(c), p.Visibility); err != nil {
		return err
	}
	if _, err := s.bodyProject(c, c.FormValue("project_id")); err != nil {
		return err
	}
	p.ProjectID = c.FormValue("project_id")
	f, err := fh.Open()
	if err != nil {
		return errcode.Invalid("file", "cannot be read")
	}
	defer f.Close()
	if p.Data, err = io.ReadAll(io.LimitReader(f, int64(s.Config.UploadLimit)+1)); err != nil {
		return errcode.Invalid("file", "cannot be read")
	}
	if len(p.Data) > s.Config.UploadLimit {
		return tooLarge()
	}
	res, err := s.KB.Ingest(s.ctx(c), p)
	if err != nil {
		return err
	}
	return ingestAnswer(c, res)
}

// mayPublish refuses org visibility (every user reads it, asks and content plans cite it) to all
// but admins (DECISIONS.md, Knowledge base): one account must not write into everyone's answers.
func mayPublish(p *auth.Principal, visibility string) error {
	if visibility == store.VisibilityOrg && !p.IsAdmin() {
		return errcode.New(errcode.Authorization, "Only an admin may publish org knowledge; use private or project")
	}
	return nil
}

type textInput struct {
	Text         string          `json:"text"`
	Title        string          `json:"title"`
	SourceName   string          `json:"source_name"`
	ProjectID    string          `json:"project_id"`
	Visibility   string          `json:"visibility"`
	ChunkSize    *int            `json:"chunk_size"`
	ChunkOverlap *int            `json:"chunk_overlap"`
	Metadata     json.RawMessage `json:"metadata"`
	Internal     bool            `json:"internal"` // the source answers questions but is never used in generated content
}

func (in *textInput) params(userID string) (kb.IngestParams, error) {
	size, overlap := "", ""
	if in.ChunkSize != nil {
		size = strconv.Itoa(*in.ChunkSize)
	}
	if in.ChunkOverlap != nil {
		overlap = strconv.Itoa(*in.ChunkOverlap)
	}
	opts, err := chunkOptions(size, overlap)
	if err != nil {
		return kb.IngestParams{}, err
	}
	meta := in.Metadata
	if len(meta) > 0 && (string(meta) == "null" || meta[0] != '{') {
		if string(meta) != "null" {
			return kb.IngestParams{}, errcode.Invalid("metadata", "must be an object")
		}
		meta = nil
	}
	p := kb.IngestParams{UserID: userID, ProjectID: in.ProjectID, SourceName: in.SourceName, Visibility: in.Visibility,
		Title: in.Title, Text: in.Text, Chunk: opts, Metadata: meta, Internal: in.Internal}
	return p, p.Validate()
}

func (s *Server) kbText(c *fiber.Ctx) error {
	var in textInput
	if err := decode(c, &in); err != nil {
		return err
	}
	p, err := in.params(principal(c).UserID)
	if err != nil {
		return err
	}
	if err := mayPublish(principal(c), p.Visibility); err != nil {
		return err
	}
	if _, err := s.bodyProject(c, in.ProjectID); err != nil {
		return err
	}
	res, err := s.KB.Ingest(s.ctx(c), p)
	if err != nil {
		return err
	}
	return ingestAnswer(c, res)
}

// maxBatch is the most items of one batch/text call.
const maxBatch = 100

func (s *Server) kbBatchText(c *fiber.Ctx) error {
	items, errs, err := batchTextItems(c)
	if err != nil {
		return err
	}
	if len(items) < 1 || len(items) > maxBatch {
		return errcode.Invalid("items", fmt.Sprintf("must hold 1 to %d items", maxBatch))
	}
	// Items are checked here, one by one, and the good ones ingested together (kb.IngestBatch).
	var params []kb.IngestParams
	var at []int // item index of each params entry
	for i := range items {
		if errs[i] != nil {
			continue
		}
		p, err := s.batchItem(c, &items[i])
		if err != nil {
			errs[i] = err
			continue
		}
		params = append(params, p)
		at = append(at, i)
	}
	results := make([]*kb.IngestResult, len(items))
	for j, o := range s.KB.IngestBatch(s.ctx(c), params) {
		results[at[j]], errs[at[j]] = o.Result, o.Err
	}
	docs := []batchDoc{}
	failed := []batchFailure{}
	// duplicates: the items whose text their source held already (nothing written for them; the
	// document is the one stored), so a caller that sends a batch again can tell.
	duplicates := []int{}
	written := 0 // chunks this call wrote: a duplicate's were written by an earlier call
	for i, err := range errs {
		if err != nil {
			if errcode.As(err) == nil { // a store failure: the item answers "indexing failed", the log keeps why
				s.Log.Error("kb: batch/text item failed", "index", i, "err", err)
			}
			failed = append(failed, newBatchFailure(i, err))
			continue
		}
		r := results[i]
		docs = append(docs, batchDoc{docView: viewDoc(r.Document, r.Source.Name), Index: i, Duplicate: r.Duplicate})
		if r.Duplicate {
			duplicates = append(duplicates, i)
		} else {
			written += r.ChunksCount
		}
	}
	return ok(c, fiber.StatusOK, fiber.Map{"documents": docs, "chunks_count": written, "failed": failed, "duplicates": duplicates})
}

// batchDoc is the document of one item of a batch/text call, with the item's index (documents
// are listed in item order, without the failed items, so the index says which is which) and
// whether it is a duplicate (the document stored before, nothing written for it).
type batchDoc struct {
	docView
	Index     int  `json:"index"`
	Duplicate bool `json:"duplicate"`
}

// batchFailure is a failed item of a batch/text call: error is the public message
// (DECISIONS.md's {index, error}); code, errno, status and details are those the error envelope
// would carry had the item been sent alone, so a caller can tell a bad item from one to retry
// (409: the same content still being indexed by another call).
type batchFailure struct {
	Index   int          `json:"index"`
	Error   string       `json:"error"`
	Code    errcode.Code `json:"code"`
	Errno   int          `json:"errno"`
	Status  int          `json:"status"`
	Details any          `json:"details,omitempty"`
}

func newBatchFailure(i int, err error) batchFailure {
	e := errcode.As(err)
	if e == nil {
		e = errcode.New(errcode.Unknown, "indexing failed") // a store failure: kbBatchText logs its cause
	}
	return batchFailure{Index: i, Error: e.Message(), Code: e.Code, Errno: e.Code.Errno(), Status: e.HTTPStatus(), Details: e.Details}
}

// batchTextItems reads the items of a batch/text body, and the error of each item that does not
// decode as a textInput. A body whose items all decode is read in one pass; only when that fails
// (a bad item, or a malformed body) is it read again item by item, so that each bad item gets its
// own error while the others are ingested. Reading every body item by item scanned its text four
// times, about a tenth of the host's CPU in the bench's HTTP case (50 documents of 300 to 3,000
// characters a call, issue 24). The one pass is goccy/go-json's, which validates as it decodes
// (encoding/json validates the whole body first, then decodes it).
func batchTextItems(c *fiber.Ctx) ([]textInput, []error, error) {
	var all struct {
		Items []textInput `json:"items"`
	}
	if gojson.Unmarshal(c.Body(), &all) == nil {
		return all.Items, make([]error, len(all.Items)), nil
	}
	var in struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := decode(c, &in); err != nil {
		return nil, nil, err
	}
	items, errs := make([]textInput, len(in.Items)), make([]error, len(in.Items))
	for i, raw := range in.Items {
		errs[i] = decodeItem(raw, &items[i])
	}
	return items, errs, nil
}

// decodeItem reads one item of a batch/text call. A field of the wrong type fails the item naming
// the field, as it would fail POST /text.
func decodeItem(raw json.RawMessage, in *textInput) error {
	if err := json.Unmarshal(raw, in); err != nil {
		return decodeError(err, "item must be an object {text, title?, source_name?, project_id?, visibility?}")
	}
	return nil
}

// batchItem checks one item of a batch/text call.
func (s *Server) batchItem(c *fiber.Ctx, in *textInput) (kb.IngestParams, error) {
	p, err := in.params(principal(c).UserID)
	if err != nil {
		return kb.IngestParams{}, err
	}
	if err := mayPublish(principal(c), p.Visibility); err != nil {
		return kb.IngestParams{}, err
	}
	if _, err := s.bodyProject(c, in.ProjectID); err != nil {
		return kb.IngestParams{}, err
	}
	return p, nil
}

type sourcesInput struct {
	Paging
	ProjectID string `query:"project_id" doc:"the sources of this project of the caller's"`
}

// page is a page of a knowledge listing: the fields beside its records (data's keys).
type page struct {
	Total   int  `json:"total" doc:"matching records"`
	Page    int  `json:"page"`
	Limit   int  `json:"limit"`
	HasMore bool `json:"hasMore" doc:"a later page has more"`
}

func pageOf(n, total int, pq Paging) page {
	return page{Total: total, Page: pq.Page, Limit: pq.Limit, HasMore: pq.offset()+n < total}
}

type sourcesAnswer struct {
	Sources []store.KnowledgeSource `json:"sources"`
	page
}

func (s *Server) kbSources(ctx context.Context, in *sourcesInput) (*Data[sourcesAnswer], error) {
	v := viewer(ctx)
	if in.ProjectID != "" {
		if _, err := s.namedProject(ctx, in.ProjectID); err != nil {
			return nil, err
		}
		v.ProjectID = in.ProjectID
	}
	items, total, err := s.Store.ListSources(ctx, store.ListKnowledgeParams{Viewer: v, Limit: in.Limit, Offset: in.offset()})
	if err != nil {
		return nil, err
	}
	return answerData(sourcesAnswer{items, pageOf(len(items), total, in.Paging)})
}

// readableSource loads a source the caller may read; anything else is 404.
func (s *Server) readableSource(ctx context.Context, id string) (*store.KnowledgeSource, error) {
	okRead, err := s.Store.CanRead(ctx, viewer(ctx), id)
	if err != nil {
		return nil, err
	}
	if !okRead {
		return nil, errcode.New(errcode.NotFound, "Source not found")
	}
	return s.Store.GetSource(ctx, id)
}

type sourceDocumentsInput struct {
	ID string `path:"id"`
	Paging
}

type sourceDocumentsAnswer struct {
	Source    *store.KnowledgeSource `json:"source"`
	Documents []docView              `json:"documents"`
	page
}

func (s *Server) kbSourceDocuments(ctx context.Context, in *sourceDocumentsInput) (*Data[sourceDocumentsAnswer], error) {
	src, err := s.readableSource(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	v := viewer(ctx)
	v.SourceID = src.ID
	items, total, err := s.Store.ListDocuments(ctx, store.ListKnowledgeParams{Viewer: v, Limit: in.Limit, Offset: in.offset()})
	if err != nil {
		return nil, err
	}
	return answerData(sourceDocumentsAnswer{src, viewDocs(items), pageOf(len(items), total, in.Paging)})
}

type documentsInput struct {
	Paging
	SourceID string `query:"source_id" doc:"the documents of this source"`
}

type documentsAnswer struct {
	Documents []docView `json:"documents"`
	page
}

func (s *Server) kbDocuments(ctx context.Context, in *documentsInput) (*Data[documentsAnswer], error) {
	v := viewer(ctx)
	v.SourceID = in.SourceID
	items, total, err := s.Store.ListDocuments(ctx, store.ListKnowledgeParams{Viewer: v, Limit: in.Limit, Offset: in.offset()})
	if err != nil {
		return nil, err
	}
	return answerData(documentsAnswer{viewDocs(items), pageOf(len(items), total, in.Paging)})
}

type idPath struct {
	ID string `path:"id"`
}

type documentAnswer struct {
	Document docView `json:"document"`
}

func (s *Server) kbDocument(ctx context.Context, in *idPath) (*Data[documentAnswer], error) {
	notFound := errcode.New(errcode.NotFound, "Document not found")
	d, err := s.Store.GetDocument(ctx, in.ID)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, notFound
		}
		return nil, err
	}
	src, err := s.readableSource(ctx, d.SourceID)
	if err != nil {
		if e := errcode.As(err); e != nil && e.Code == errcode.NotFound {
			return nil, notFound
		}
		return nil, err
	}
	return answerData(documentAnswer{viewDoc(d, src.Name)})
}

type searchFilters struct {
	SourceNames []string          `json:"source_names"`
	SourceName  string            `json:"source_name"`
	DocumentIDs []string          `json:"document_ids"`
	Metadata    map[string]string `json:"metadata"`
}

type searchInput struct {
	Query     string         `json:"query"`
	Question  string         `json:"question"`
	TopK      *int           `json:"top_k"` // nil: absent, the default; 0 is refused like any value out of range
	TopKCamel *int           `json:"topK"`
	ProjectID string         `json:"project_id"`
	Filters   *searchFilters `json:"filters"`
}

// checkTopK refuses a top_k the client gave that is out of range. The service reads 0 as "use the
// default" (its callers inside the host leave it unset); from a client, absent is the default and
// an explicit 0 is as wrong as -3.
func checkTopK(field string, n int) error {
	if n < 1 || n > kb.MaxTopK {
		return errcode.Invalid(field, fmt.Sprintf("must be a whole number between 1 and %d", kb.MaxTopK))
	}
	return nil
}

// searchParams checks the project and builds the service's parameters.
func (s *Server) searchParams(c *fiber.Ctx, in *searchInput) (kb.SearchParams, error) {
	p := principal(c)
	q := in.Query
	if strings.TrimSpace(q) == "" {
		q = in.Question
	}
	k := 0 // the service's default
	for _, v := range []struct {
		field string
		n     *int
	}{{"top_k", in.TopK}, {"topK", in.TopKCamel}} {
		if v.n != nil {
			if err := checkTopK(v.field, *v.n); err != nil {
				return kb.SearchParams{}, err
			}
			k = *v.n
			break
		}
	}
	if p.IsTool() {
		// A tool credential reads its grant's project only: none named is that one.
		if in.ProjectID == "" {
			in.ProjectID = p.ToolProject
		}
		if in.ProjectID != p.ToolProject {
			return kb.SearchParams{}, errcode.New(errcode.Authorization, "This tool credential reads the knowledge of its own project only")
		}
	}
	sp := kb.SearchParams{UserID: p.UserID, Admin: p.IsAdmin(), ProjectID: in.ProjectID, Query: q, TopK: k}
	if f := in.Filters; f != nil {
		sp.SourceNames = f.SourceNames
		if f.SourceName != "" {
			sp.SourceNames = append(sp.SourceNames, f.SourceName)
		}
		sp.DocumentIDs, sp.Metadata = f.DocumentIDs, f.Metadata
	}
	if err := sp.Validate(); err != nil {
		return sp, err
	}
	if _, err := s.bodyProject(c, in.ProjectID); err != nil {
		return sp, err
	}
	return sp, nil
}

func (s *Server) kbSearch(c *fiber.Ctx) error {
	var in searchInput
	if err := decode(c, &in); err != nil {
		return err
	}
	hits, sp, err := s.loggedSearch(c, &in)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, fiber.Map{"hits": hits, "query": sp.Query, "top_k": sp.TopK})
}

// loggedSearch runs a search of either form of the search route, logging it for the metrics.
func (s *Server) loggedSearch(c *fiber.Ctx, in *searchInput) ([]kb.Hit, kb.SearchParams, error) {
	sp, err := s.searchParams(c, in)
	if err != nil {
		return nil, sp, err
	}
	sp.Log = true
	hits, err := s.KB.Search(s.ctx(c), sp)
	return hits, sp, err
}

func (s *Server) kbSearchGet(c *fiber.Ctx) error {
	in := searchInput{Query: c.Query("query", c.Query("q")), ProjectID: c.Query("project_id")}
	for _, k := range []string{"topK", "top_k"} {
		if v := c.Query(k); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return errcode.Invalid(k, "must be a whole number")
			}
			if err := checkTopK(k, n); err != nil {
				return err
			}
			in.TopK = &n
			break
		}
	}
	hits, _, err := s.loggedSearch(c, &in)
	if err != nil {
		return err
	}
	scores := make([]fiber.Map, len(hits))
	for i, h := range hits {
		scores[i] = fiber.Map{"chunk_id": h.ChunkID, "vector": h.Scores.Vector, "keyword": h.Scores.Keyword, "total": h.Scores.Total}
	}
	return ok(c, fiber.StatusOK, fiber.Map{"chunks": hits, "scores": scores})
}

// readSearch decodes a search body and makes the search it asks for.
func (s *Server) readSearch(c *fiber.Ctx) (kb.SearchParams, error) {
	var in searchInput
	if err := decode(c, &in); err != nil {
		return kb.SearchParams{}, err
	}
	return s.searchParams(c, &in)
}

func (s *Server) kbAsk(c *fiber.Ctx) error {
	sp, err := s.readSearch(c)
	if err != nil {
		return err
	}
	ans, err := s.KB.Ask(s.ctx(c), sp)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, fiber.Map{"query_id": ans.QueryID, "answer": ans.Answer, "citations": ans.Citations,
		"hits": ans.Hits, "cited": ans.Cited, "model": ans.Model})
}

func (s *Server) kbContext(c *fiber.Ctx) error {
	sp, err := s.readSearch(c)
	if err != nil {
		return err
	}
	text, cits, hits, err := s.KB.Context(s.ctx(c), sp)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, fiber.Map{"context": text, "citations": cits, "hits": hits})
}

type feedbackInput struct {
	QueryID string `path:"queryId" doc:"the query_id of an ask"`
	Body    struct {
		Rating int    `json:"rating" minimum:"1" maximum:"5"`
		Notes  string `json:"notes,omitempty" maxLength:"2000"`
	}
}

type feedbackAnswer struct {
	QueryID  string `json:"query_id"`
	Feedback struct {
		Rating int    `json:"rating"`
		Notes  string `json:"notes"`
	} `json:"feedback"`
}

func (s *Server) kbFeedback(ctx context.Context, in *feedbackInput) (*Data[feedbackAnswer], error) {
	q, err := s.KB.Feedback(ctx, caller(ctx).UserID, in.QueryID, in.Body.Rating, in.Body.Notes)
	if err != nil {
		return nil, err
	}
	out := feedbackAnswer{QueryID: q.ID}
	out.Feedback.Rating, out.Feedback.Notes = in.Body.Rating, in.Body.Notes
	return answerData(out)
}

func (s *Server) kbMetrics(ctx context.Context, _ *struct{}) (*Data[kb.Metrics], error) {
	p := caller(ctx)
	m, err := s.KB.Metrics(ctx, p.UserID, p.IsAdmin())
	if err != nil {
		return nil, err
	}
	return answerData(*m)
}

type evalSetAnswer struct {
	Items       []kb.EvalItem     `json:"items"`
	Scenarios   []kb.EvalScenario `json:"scenarios"`
	Total       int               `json:"total" doc:"the number of items"`
	OutOfDomain []kb.EvalItem     `json:"out_of_domain" doc:"questions an ask must answer \"not found\""`
}

func (s *Server) kbEvalSet(context.Context, *struct{}) (*Data[evalSetAnswer], error) {
	es, err := kb.LoadEvalSet()
	if err != nil {
		return nil, err
	}
	return answerData(evalSetAnswer{Items: es.Items, Scenarios: es.Scenarios, Total: len(es.Items), OutOfDomain: es.OutOfDomain})
}

type evalRunInput struct {
	Body *struct { // optional: no body runs the whole set with the default top_k
		TopK       *int   `json:"top_k,omitempty" minimum:"1" maximum:"50" nullable:"true" doc:"default 5"`
		Scenario   string `json:"scenario,omitempty" doc:"only this scenario's questions"`
		SourceName string `json:"source_name,omitempty" doc:"search this source only"`
		Answers    bool   `json:"answers,omitempty" doc:"also ask every question and score the answers"`
	}
}

func (s *Server) kbEvalRun(ctx context.Context, in *evalRunInput) (*Data[kb.EvalResult], error) {
	p := caller(ctx)
	ep := kb.EvalParams{UserID: p.UserID, Admin: p.IsAdmin()}
	if b := in.Body; b != nil {
		ep.TopK, ep.Scenario, ep.SourceName, ep.Answers = deref(b.TopK), b.Scenario, b.SourceName, b.Answers
	}
	res, err := s.KB.RunEval(ctx, ep)
	if err != nil {
		return nil, err
	}
	return answerData(*res)
}

type putFactInput struct {
	Body struct {
		Key   string `json:"key" doc:"at most 200 characters, without the white space around it (kept trimmed)"`
		Value string `json:"value,omitempty" maxLength:"10000"`
	}
}

type factAnswer struct {
	Fact *store.Fact `json:"fact"`
}

func (s *Server) kbPutFact(ctx context.Context, in *putFactInput) (*Data[factAnswer], error) {
	// The key is checked trimmed, as it is kept: a tag would count the white space around it.
	key := strings.TrimSpace(in.Body.Key)
	if err := fieldLen("key", key, true, kb.MaxFactKeyLen); err != nil {
		return nil, err
	}
	f, err := s.KB.PutFact(ctx, caller(ctx).UserID, key, in.Body.Value)
	if err != nil {
		return nil, err
	}
	return answerData(factAnswer{f})
}

type factsAnswer struct {
	Facts []store.Fact `json:"facts"`
}

func (s *Server) kbFacts(ctx context.Context, _ *struct{}) (*Data[factsAnswer], error) {
	fs, err := s.KB.Facts(ctx, caller(ctx).UserID)
	if err != nil {
		return nil, err
	}
	return answerData(factsAnswer{fs})
}

type deletedDocumentAnswer struct {
	Deleted *kb.Deleted `json:"deleted"`
}

// kbDeleteDocument serves DELETE /api/knowledge/documents/{id} (a document of the caller's
// sources; an admin: any).
func (s *Server) kbDeleteDocument(ctx context.Context, in *idPath) (*Data[deletedDocumentAnswer], error) {
	p := caller(ctx)
	d, err := s.KB.DeleteDocument(ctx, p.UserID, p.IsAdmin(), in.ID)
	if err != nil {
		return nil, err
	}
	return answerData(deletedDocumentAnswer{d})
}

type deletedFactAnswer struct {
	Deleted bool `json:"deleted" enum:"true"`
}

// kbDeleteFact serves DELETE /api/knowledge/facts/{id} (the fact's id or key).
func (s *Server) kbDeleteFact(ctx context.Context, in *idPath) (*Data[deletedFactAnswer], error) {
	if err := s.KB.DeleteFact(ctx, caller(ctx).UserID, in.ID); err != nil {
		return nil, err
	}
	return answerData(deletedFactAnswer{true})
}

type reindexInput struct {
	Body *struct { // no body reads as {}: source_id is missing, as in one without it
		SourceID string `json:"source_id" minLength:"1" maxLength:"100"`
	}
}

func (s *Server) kbReindex(ctx context.Context, in *reindexInput) (*Data[kb.ReindexResult], error) {
	if in.Body == nil {
		return nil, errcode.Invalid("source_id", "is required")
	}
	p := caller(ctx)
	res, err := s.KB.Reindex(ctx, p.UserID, p.IsAdmin(), in.Body.SourceID)
	if err != nil {
		return nil, err
	}
	return answerData(*res)
}
