package api

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
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

// knowledgeOperations declares the Knowledge family (typed: operations.go). Every operation
// first checks that the knowledge base is wired (needKB), before its input is read.
func (s *Server) knowledgeOperations(api huma.API) {
	const tag = "Knowledge"
	kb := []fiber.Handler{s.needKB}
	register(api, op{Method: "POST", Path: "/api/knowledge/upload", Tag: tag, Summary: "Ingest a file (txt, md, json, csv, html, pdf, docx)",
		Status: 201, Also: []int{200}, Errors: []int{403, 413}, Before: kb,
		Desc: "201 with the new document; a file whose hash the source already holds answers 200 with duplicate: true and the " +
			"existing document (and a file that could not be read 200 with its failed document). Only an admin may publish " +
			"visibility org (403 for others). The form is read as it arrives, its file to a temporary file, after " +
			"authentication (UPLOAD_LIMIT_BYTES)."}, s.kbUpload)
	register(api, op{Method: "POST", Path: "/api/knowledge/text", Tag: tag, Summary: "Ingest a text", Status: 201, Also: []int{200},
		Errors: []int{403}, Before: kb, Desc: "201 with the new document; a text the source already holds answers 200 with " +
			"duplicate: true (and a text that could not be indexed 200 with its failed document). Only an admin may publish " +
			"visibility org (403 for others)."}, s.kbText)
	register(api, op{Method: "POST", Path: "/api/knowledge/batch/text", Tag: tag, Summary: "Ingest up to 100 texts",
		Errors: []int{403}, Before: kb, JSON: reflect.TypeFor[batchTextInputBody](), Desc: "Each item is ingested as POST /text would; one bad item does not sink the others. " +
			"An item whose text another call is indexing at that moment (the same batch sent twice at once) waits for it, up to " +
			"10 s, and is then a duplicate of what it wrote (or written, if that call failed)."}, s.kbBatchText)
	register(api, op{Method: "POST", Path: "/api/knowledge/search", Tag: tag, Summary: "Hybrid search",
		Errors: []int{403}, Before: kb}, s.kbSearch)
	register(api, op{Method: "GET", Path: "/api/knowledge/search", Tag: tag, Summary: "Hybrid search (whitepaper form)",
		Errors: []int{403}, Before: kb}, s.kbSearchGet)
	register(api, op{Method: "POST", Path: "/api/knowledge/ask", Tag: tag, Summary: "Answer a question with citations",
		Errors: []int{403}, Before: kb,
		Desc: "With no hits the answer says no citable basis was found; citations are empty and no model is called."}, s.kbAsk)
	register(api, op{Method: "POST", Path: "/api/knowledge/context", Tag: tag, Summary: "Context for the chatflow tool",
		Errors: []int{403}, Before: kb}, s.kbContext)
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

// ingestAnswer is the answer of an ingest: the document, its source, the chunks written and
// whether the source held the text or file already.
type ingestAnswer struct {
	Document    docView                `json:"document"`
	ChunksCount int                    `json:"chunks_count"`
	Duplicate   bool                   `json:"duplicate" doc:"the source already held this text or file (its hash): the document is the one stored"`
	Source      *store.KnowledgeSource `json:"source"`
}

// ingested answers an ingest: 201 with a new indexed document, 200 with a duplicate or a
// document that failed.
func ingested(res *kb.IngestResult) (*DataStatus[ingestAnswer], error) {
	status := http.StatusCreated
	if res.Duplicate || res.Document.ParseStatus != store.DocIndexed {
		status = http.StatusOK
	}
	return answerDataStatus(status, ingestAnswer{Document: viewDoc(res.Document, res.Source.Name), ChunksCount: res.ChunksCount,
		Duplicate: res.Duplicate, Source: res.Source})
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

type kbUploadInput struct {
	RawBody huma.MultipartFormFiles[kbUploadForm]
}

// kbUploadForm is the form of a knowledge upload: the file, and the fields of a text ingest as
// form fields. The form is parsed (and cleaned) by the uploadForm middleware before huma reads it.
type kbUploadForm struct {
	File         huma.FormFile `form:"file" contentType:"application/octet-stream" required:"true" doc:"txt, md, json, csv, html, pdf or docx (by its name's extension)"`
	Title        string        `form:"title" required:"false" maxLength:"500"`
	SourceName   string        `form:"source_name" required:"false" maxLength:"200" doc:"the source it goes in (made when new); default \"default\""`
	ProjectID    string        `form:"project_id" required:"false" doc:"a project of the caller's: the source is the project's"`
	Visibility   string        `form:"visibility" required:"false" enum:"private,project,org" doc:"default project; only an admin may publish org"`
	ChunkSize    int           `form:"chunk_size" required:"false" minimum:"200" maximum:"4000" doc:"default 1000"`
	ChunkOverlap int           `form:"chunk_overlap" required:"false" minimum:"0" doc:"at most chunk_size/2; default 180"`
	Internal     string        `form:"internal" required:"false" doc:"true: the source answers the owner's questions but is never used in generated content"`
}

func (s *Server) kbUpload(ctx context.Context, in *kbUploadInput) (*DataStatus[ingestAnswer], error) {
	form, f := in.RawBody.Form, in.RawBody.Data()
	defer f.File.Close()
	if f.File.Size > int64(s.Config.UploadLimit) {
		return nil, tooLarge()
	}
	// A chunk field given (0 is an overlap; an absent one is the default, clamped to the size).
	given := func(field string, n int) string {
		if v := form.Value[field]; len(v) > 0 && v[0] != "" {
			return strconv.Itoa(n)
		}
		return ""
	}
	opts, err := chunkOptions(given("chunk_size", f.ChunkSize), given("chunk_overlap", f.ChunkOverlap))
	if err != nil {
		return nil, err
	}
	p := kb.IngestParams{UserID: caller(ctx).UserID, SourceName: f.SourceName, Visibility: f.Visibility, Title: f.Title,
		Filename: f.File.Filename, IsFile: true, Chunk: opts, Internal: f.Internal == "true",
		// The type the part declares, none when it declares none (huma would sniff one): kb reads
		// a file by its name's extension and keeps the declared type.
		MimeType: form.File["file"][0].Header.Get(fiber.HeaderContentType)}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := mayPublish(caller(ctx), p.Visibility); err != nil {
		return nil, err
	}
	if _, err := s.namedProject(ctx, f.ProjectID); err != nil {
		return nil, err
	}
	p.ProjectID = f.ProjectID
	if p.Data, err = io.ReadAll(io.LimitReader(f.File, int64(s.Config.UploadLimit)+1)); err != nil {
		return nil, errcode.Invalid("file", "cannot be read")
	}
	if len(p.Data) > s.Config.UploadLimit {
		return nil, tooLarge()
	}
	res, err := s.KB.Ingest(ctx, p)
	if err != nil {
		return nil, err
	}
	return ingested(res)
}

// mayPublish refuses org visibility (every user reads it, asks and content plans cite it) to all
// but admins (DECISIONS.md, Knowledge base): one account must not write into everyone's answers.
func mayPublish(p *auth.Principal, visibility string) error {
	if visibility == store.VisibilityOrg && !p.IsAdmin() {
		return errcode.New(errcode.Authorization, "Only an admin may publish org knowledge; use private or project")
	}
	return nil
}

// textInput is one text to ingest: the body of POST /text and an item of POST /batch/text
// (decoded by decodeBatch, not by huma: params checks what the tags say too).
type textInput struct {
	Text         string          `json:"text" doc:"at most 5 MiB; not blank"`
	Title        string          `json:"title,omitempty" maxLength:"500"`
	SourceName   string          `json:"source_name,omitempty" maxLength:"200" doc:"the source it goes in (made when new); default \"default\""`
	ProjectID    string          `json:"project_id,omitempty" nullable:"true" doc:"a project of the caller's: the source is the project's"`
	Visibility   string          `json:"visibility,omitempty" enum:"private,project,org" doc:"default project; only an admin may publish org"`
	ChunkSize    *int            `json:"chunk_size,omitempty" minimum:"200" maximum:"4000" nullable:"true" doc:"default 1000"`
	ChunkOverlap *int            `json:"chunk_overlap,omitempty" minimum:"0" nullable:"true" doc:"at most chunk_size/2; default 180"`
	Metadata     json.RawMessage `json:"metadata,omitempty" doc:"an object kept with the document; search's metadata filter reads it"`
	Internal     bool            `json:"internal,omitempty" doc:"the source answers the owner's questions but is never used in generated content"`
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

// ingestParams checks one text to ingest (a body of /text, an item of /batch/text): its fields,
// who may publish it and the project it names.
func (s *Server) ingestParams(ctx context.Context, in *textInput) (kb.IngestParams, error) {
	p, err := in.params(caller(ctx).UserID)
	if err != nil {
		return kb.IngestParams{}, err
	}
	if err := mayPublish(caller(ctx), p.Visibility); err != nil {
		return kb.IngestParams{}, err
	}
	if _, err := s.namedProject(ctx, in.ProjectID); err != nil {
		return kb.IngestParams{}, err
	}
	return p, nil
}

type textBody struct {
	Body textInput
}

func (s *Server) kbText(ctx context.Context, in *textBody) (*DataStatus[ingestAnswer], error) {
	p, err := s.ingestParams(ctx, &in.Body)
	if err != nil {
		return nil, err
	}
	res, err := s.KB.Ingest(ctx, p)
	if err != nil {
		return nil, err
	}
	return ingested(res)
}

// batchTextInput: kbBatchText decodes its body (batchTextInputBody) itself.
type batchTextInput struct{}

// batchTextInputBody is the body of POST /batch/text, as documented and validated. An item that
// is not a text to ingest fails alone.
type batchTextInputBody struct {
	Items []batchTextItem `json:"items" minItems:"1" maxItems:"100" nullable:"false"`
}

// batchTextItem is an item of a batch/text body as it came: in a body with a bad item each is
// decoded alone (decodeBatch), so that the bad one fails alone.
type batchTextItem json.RawMessage

func (b *batchTextItem) UnmarshalJSON(data []byte) error {
	*b = append((*b)[:0], data...)
	return nil
}

// Schema: a text to ingest, or anything else (which fails alone, in failed).
func (batchTextItem) Schema(r huma.Registry) *huma.Schema {
	return &huma.Schema{AnyOf: []*huma.Schema{
		huma.SchemaFromType(r, reflect.TypeFor[textInput]()),
		{Description: "any other item (not an object, a field of the wrong type) fails alone, in failed; the others are ingested"},
	}}
}

type batchTextAnswer struct {
	Documents   []batchDoc     `json:"documents" doc:"the items' documents, in item order (without the failed items)"`
	ChunksCount int            `json:"chunks_count" doc:"the chunks this call wrote (a duplicate's were written before)"`
	Failed      []batchFailure `json:"failed"`
	// Duplicates are the items whose text their source held already (nothing written for them;
	// the document is the one stored), so a caller that sends a batch again can tell.
	Duplicates []int `json:"duplicates" doc:"the items whose text their source held already: nothing was written for them, and their documents are the ones stored"`
}

func (s *Server) kbBatchText(ctx context.Context, _ *batchTextInput) (*Data[batchTextAnswer], error) {
	items, errs, err := decodeBatch(ctx, requestBody(ctx))
	if err != nil {
		return nil, err
	}
	// Items are checked here, one by one, and the good ones ingested together (kb.IngestBatch).
	var params []kb.IngestParams
	var at []int // item index of each params entry
	for i := range items {
		if errs[i] != nil {
			continue
		}
		p, err := s.ingestParams(ctx, &items[i])
		if err != nil {
			errs[i] = err
			continue
		}
		params = append(params, p)
		at = append(at, i)
	}
	results := make([]*kb.IngestResult, len(items))
	for j, o := range s.KB.IngestBatch(ctx, params) {
		results[at[j]], errs[at[j]] = o.Result, o.Err
	}
	out := batchTextAnswer{Documents: []batchDoc{}, Failed: []batchFailure{}, Duplicates: []int{}}
	for i, err := range errs {
		if err != nil {
			if errcode.As(err) == nil { // a store failure: the item answers "indexing failed", the log keeps why
				s.Log.Error("kb: batch/text item failed", "index", i, "err", err)
			}
			out.Failed = append(out.Failed, newBatchFailure(i, err))
			continue
		}
		r := results[i]
		out.Documents = append(out.Documents, batchDoc{docView: viewDoc(r.Document, r.Source.Name), Index: i, Duplicate: r.Duplicate})
		if r.Duplicate {
			out.Duplicates = append(out.Duplicates, i)
		} else {
			out.ChunksCount += r.ChunksCount // a duplicate's chunks were written by an earlier call
		}
	}
	return answerData(out)
}

// batchDoc is the document of one item of a batch/text call, with the item's index (documents
// are listed in item order, without the failed items, so the index says which is which) and
// whether it is a duplicate (the document stored before, nothing written for it).
type batchDoc struct {
	docView
	Index     int  `json:"index" doc:"the item this document answers"`
	Duplicate bool `json:"duplicate" doc:"the source held the item's text already: nothing was written for it, and the document is the one stored"`
}

// batchFailure is a failed item of a batch/text call: error is the public message
// (DECISIONS.md's {index, error}); code, errno, status and details are those the error envelope
// would carry had the item been sent alone, so a caller can tell a bad item from one to retry
// (409: the same content still being indexed by another call).
type batchFailure struct {
	Index   int          `json:"index" doc:"the item that failed"`
	Error   string       `json:"error" doc:"the public message"`
	Code    errcode.Code `json:"code" doc:"catalogue code, as in the error envelope"`
	Errno   int          `json:"errno"`
	Status  int          `json:"status" doc:"the HTTP status the item would have had alone: 409 when the same text was still being indexed by another call after the wait"`
	Details any          `json:"details,omitempty" doc:"field errors [{field, problem}], as in the error envelope"`
}

func newBatchFailure(i int, err error) batchFailure {
	e := errcode.As(err)
	if e == nil {
		e = errcode.New(errcode.Unknown, "indexing failed") // a store failure: kbBatchText logs its cause
	}
	return batchFailure{Index: i, Error: e.Message(), Code: e.Code, Errno: e.Code.Errno(), Status: e.HTTPStatus(), Details: e.Details}
}

// decodeBatch reads a batch/text body: its items, and for each item that is not a text to ingest
// its error (a field of the wrong type fails the item naming the field, as it would fail POST
// /text); err is the error of a body that does not validate, as huma's for any other route.
//
// Its texts are most of the body, and reading them is what costs: a body whose items all decode
// is read once, by goccy/go-json (it reads what encoding/json reads: TestBatchTextOnePass), and
// validated as a stand-in of its shape. huma's own reading, encoding/json twice (into an untyped
// value to validate, then into the input) before each item's decode, was 6% of the CPU of a
// call of the bench's HTTP case (50 documents of 300 to 3,000 characters, SQLite;
// BenchmarkBatchText). A body with a bad item, or one that does not validate, is read as huma
// would read it, then item by item.
func decodeBatch(ctx context.Context, raw []byte) ([]textInput, []error, error) {
	var fast struct {
		Items []textInput `json:"items"`
	}
	if gojson.Unmarshal(raw, &fast) == nil && fast.Items != nil {
		// Every item is a text: the items' schema takes any value, so nils stand for them.
		if err := validBody(ctx, map[string]any{"items": make([]any, len(fast.Items))}); err != nil {
			return nil, nil, err
		}
		return fast.Items, make([]error, len(fast.Items)), nil
	}
	var untyped any
	if err := decodeJSON(raw, &untyped); err != nil {
		return nil, nil, malformedBody(err)
	}
	if err := validBody(ctx, untyped); err != nil {
		return nil, nil, err
	}
	var body batchTextInputBody
	if err := decodeJSON(raw, &body); err != nil {
		return nil, nil, malformedBody(err)
	}
	items, errs := make([]textInput, len(body.Items)), make([]error, len(body.Items))
	for i, item := range body.Items {
		if err := json.Unmarshal(item, &items[i]); err != nil {
			errs[i] = decodeError(err, "item must be an object {text, title?, source_name?, project_id?, visibility?}")
		}
	}
	return items, errs, nil
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
	SourceNames []string          `json:"source_names,omitempty" doc:"only these sources"`
	SourceName  string            `json:"source_name,omitempty" doc:"only this source (added to source_names)"`
	DocumentIDs []string          `json:"document_ids,omitempty" doc:"only these documents"`
	Metadata    map[string]string `json:"metadata,omitempty" doc:"only chunks whose document's metadata has these values"`
}

// searchInput is the body of search, ask and context.
type searchInput struct {
	Query     string         `json:"query,omitempty" maxLength:"2000"`
	Question  string         `json:"question,omitempty" maxLength:"2000" doc:"alias of query (whitepaper form)"`
	TopK      *int           `json:"top_k,omitempty" minimum:"1" maximum:"50" nullable:"true" doc:"default 5"`
	TopKCamel *int           `json:"topK,omitempty" minimum:"1" maximum:"50" nullable:"true" doc:"alias of top_k"`
	ProjectID string         `json:"project_id,omitempty" nullable:"true" doc:"also that project's sources (a tool credential: its own project, the default)"`
	Filters   *searchFilters `json:"filters,omitempty"`
}

// TransformSchema says that query (or its alias question) is required. huma checks required only
// on an object schema (these alternatives have no type), so it leaves them to kb's Validate,
// which names the field ("query: is required", a blank one too); the document's readers (and the
// contract test's validator) read them as JSON Schema.
func (searchInput) TransformSchema(_ huma.Registry, s *huma.Schema) *huma.Schema {
	s.AnyOf = []*huma.Schema{{Required: []string{"query"}}, {Required: []string{"question"}}}
	return s
}

type searchBody struct {
	Body searchInput
}

// searchParams checks the project and builds the service's parameters.
func (s *Server) searchParams(ctx context.Context, in *searchInput) (kb.SearchParams, error) {
	p := caller(ctx)
	q := in.Query
	if strings.TrimSpace(q) == "" {
		q = in.Question
	}
	k := 0 // the service's default
	if in.TopK != nil {
		k = *in.TopK
	} else if in.TopKCamel != nil {
		k = *in.TopKCamel
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
	if _, err := s.namedProject(ctx, in.ProjectID); err != nil {
		return sp, err
	}
	return sp, nil
}

type searchAnswer struct {
	Hits  []kb.Hit `json:"hits"`
	Query string   `json:"query"`
	TopK  int      `json:"top_k"`
}

func (s *Server) kbSearch(ctx context.Context, in *searchBody) (*Data[searchAnswer], error) {
	hits, sp, err := s.loggedSearch(ctx, &in.Body)
	if err != nil {
		return nil, err
	}
	return answerData(searchAnswer{Hits: hits, Query: sp.Query, TopK: sp.TopK})
}

// loggedSearch runs a search of either form of the search route, logging it for the metrics.
func (s *Server) loggedSearch(ctx context.Context, in *searchInput) ([]kb.Hit, kb.SearchParams, error) {
	sp, err := s.searchParams(ctx, in)
	if err != nil {
		return nil, sp, err
	}
	sp.Log = true
	hits, err := s.KB.Search(ctx, sp)
	return hits, sp, err
}

type searchQueryInput struct {
	Query     string `query:"query" maxLength:"2000" doc:"required, here or as q"`
	Q         string `query:"q" maxLength:"2000" doc:"alias of query"`
	TopK      int    `query:"topK" minimum:"1" maximum:"50" doc:"default 5"`
	TopK2     int    `query:"top_k" minimum:"1" maximum:"50" doc:"alias of topK"`
	ProjectID string `query:"project_id" doc:"also that project's sources (a tool credential: its own project, the default)"`
}

type searchScores struct {
	ChunkID string  `json:"chunk_id"`
	Vector  float64 `json:"vector"`
	Keyword float64 `json:"keyword"`
	Total   float64 `json:"total"`
}

type searchGetAnswer struct {
	Chunks []kb.Hit       `json:"chunks"`
	Scores []searchScores `json:"scores" doc:"each hit's scores, in the order of chunks"`
}

func (s *Server) kbSearchGet(ctx context.Context, in *searchQueryInput) (*Data[searchGetAnswer], error) {
	body := searchInput{Query: firstSet(in.Query, in.Q), ProjectID: in.ProjectID}
	if k := cmp.Or(in.TopK, in.TopK2); k != 0 { // 0: neither given (a given 0 is refused)
		body.TopK = &k
	}
	hits, _, err := s.loggedSearch(ctx, &body)
	if err != nil {
		return nil, err
	}
	scores := make([]searchScores, len(hits))
	for i, h := range hits {
		scores[i] = searchScores{ChunkID: h.ChunkID, Vector: h.Scores.Vector, Keyword: h.Scores.Keyword, Total: h.Scores.Total}
	}
	return answerData(searchGetAnswer{Chunks: hits, Scores: scores})
}

type askAnswer struct {
	QueryID   string        `json:"query_id" doc:"what feedback rates"`
	Answer    string        `json:"answer"`
	Citations []kb.Citation `json:"citations"`
	Hits      []kb.Hit      `json:"hits"`
	Cited     bool          `json:"cited" doc:"false: no citable basis was found"`
	Model     string        `json:"model" doc:"the language model that answered; empty for the extractive answer"`
}

func (s *Server) kbAsk(ctx context.Context, in *searchBody) (*Data[askAnswer], error) {
	sp, err := s.searchParams(ctx, &in.Body)
	if err != nil {
		return nil, err
	}
	ans, err := s.KB.Ask(ctx, sp)
	if err != nil {
		return nil, err
	}
	return answerData(askAnswer{QueryID: ans.QueryID, Answer: ans.Answer, Citations: ans.Citations, Hits: ans.Hits,
		Cited: ans.Cited, Model: ans.Model})
}

type contextAnswer struct {
	Context   string        `json:"context"`
	Citations []kb.Citation `json:"citations"`
	Hits      []kb.Hit      `json:"hits"`
}

func (s *Server) kbContext(ctx context.Context, in *searchBody) (*Data[contextAnswer], error) {
	sp, err := s.searchParams(ctx, &in.Body)
	if err != nil {
		return nil, err
	}
	text, cits, hits, err := s.KB.Context(ctx, sp)
	if err != nil {
		return nil, err
	}
	return answerData(contextAnswer{Context: text, Citations: cits, Hits: hits})
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
