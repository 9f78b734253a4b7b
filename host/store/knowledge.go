package store

import (
	"context"
	"encoding/json"
	"time"
)

// Knowledge visibilities (DECISIONS.md "Knowledge base").
const (
	VisibilityPrivate = "private" // the creator only
	VisibilityProject = "project" // the project's owner (and admins); the creator when there is no project
	VisibilityOrg     = "org"     // every user
)

// Knowledge document states.
const (
	DocUploading = "uploading"
	DocParsing   = "parsing"
	DocIndexed   = "indexed"
	DocFailed    = "failed"
)

// Knowledge query modes.
const (
	QueryAsk    = "ask"
	QuerySearch = "search"
)

// KnowledgeSource is a named collection of documents, found or created by (created_by,
// project_id, name).
type KnowledgeSource struct {
	ID         string          `json:"id"`
	CreatedBy  string          `json:"created_by"`
	ProjectID  string          `json:"project_id"` // "" when none
	Name       string          `json:"name"`
	Visibility string          `json:"visibility"`
	Scope      string          `json:"scope"` // project when ProjectID is set, else org
	Version    int             `json:"version"`
	Meta       json.RawMessage `json:"meta"`
	CreatedAt  time.Time       `json:"created_at"`
	UpdatedAt  time.Time       `json:"updated_at"`
}

// Internal reports whether the source is marked internal (meta {"internal": true}): its text
// answers the owner's questions (ask, chat) but is never narrated, captioned or quoted in generated
// content (workflow runs).
func (s *KnowledgeSource) Internal() bool {
	var m struct {
		Internal bool `json:"internal"`
	}
	return json.Unmarshal(s.Meta, &m) == nil && m.Internal
}

// KnowledgeDocument is one ingested text or file.
type KnowledgeDocument struct {
	ID           string          `json:"id"`
	SourceID     string          `json:"source_id"`
	UserID       string          `json:"user_id"`
	Title        string          `json:"title"`
	Filename     string          `json:"filename"`
	FileHash     string          `json:"file_hash"`
	FileSize     int64           `json:"file_size"`
	FileURL      string          `json:"file_url"`
	MimeType     string          `json:"mime_type"`
	ParseStatus  string          `json:"parse_status"`
	ErrorMessage string          `json:"error_message"`
	ChunkCount   int             `json:"chunk_count"`
	Metadata     json.RawMessage `json:"metadata"`
	CreatedAt    time.Time       `json:"created_at"`
	UpdatedAt    time.Time       `json:"updated_at"`
	// HeldBy and Lease, set by the ingest that adds the document, name the host life ingesting it
	// and how long its hold lasts without renewal (RenewDocumentLeases): AddDocument sets the
	// lease to end Lease after its write, by the database's clock on PostgreSQL (hosts' clocks
	// may disagree). Written by AddDocument only, never read back.
	HeldBy string        `json:"-"`
	Lease  time.Duration `json:"-"`
}

// KnowledgeChunk is one piece of a document with its embedding.
type KnowledgeChunk struct {
	ID             string
	SourceID       string
	DocumentID     string
	Index          int
	Text           string
	Heading        string
	TokenCount     int
	SearchText     string // the segmented form the keyword index is built on
	Metadata       json.RawMessage
	EmbeddingModel string
	Embedding      []float32 // nil: no embedding
}

// ChunkRow is a chunk as search reads it: its text, where it comes from and, when asked, its
// scores and embedding.
type ChunkRow struct {
	ID             string
	DocumentID     string
	DocumentTitle  string
	SourceID       string
	SourceName     string
	Index          int
	Text           string
	Heading        string
	SearchText     string
	Metadata       json.RawMessage
	EmbeddingModel string
	Embedding      []float32 // filled only by calls that say so
	// Vector is the cosine VectorCandidates computed (or KeywordCandidates, see SearchParams.Vector),
	// when HasVector says so; Keyword the driver's own full-text rank (KeywordCandidates), which
	// only picks candidates: kb ranks them by its own BM25.
	Vector, Keyword float64
	HasVector       bool
	// Partial: the row carries only what ranking needs (ID, DocumentID, SourceID, SearchText or
	// TermFreq and TermCount, EmbeddingModel and the scores); ChunksByID gives the rest. A store's candidate legs may
	// return such rows: a search ranks a few hundred candidates and shows a few of them, and
	// reading every candidate's text and names cost the pgvector path a TOAST read and two joins a
	// row (the target: search p95 at 100k chunks, BENCHMARKS.md).
	Partial bool
	// TermFreq, when not nil, stands for SearchText in a partial row of a candidate leg: the
	// frequency in SearchText of each query term (SearchParams.Terms) it holds, and TermCount its
	// number of terms, all that BM25 reads of a text (host/kb/rank.Candidate). The pgvector store
	// counts them from the keyword index's value, where a row's search text is a TOAST read.
	TermFreq  map[string]int
	TermCount int
}

// Viewer is who reads the knowledge base, and the optional filters every candidate must pass.
type Viewer struct {
	UserID      string
	Admin       bool
	ProjectID   string   // when set: only sources of this project
	SourceNames []string // when set: only sources with one of these names
	DocumentIDs []string // when set: only these documents
	SourceID    string   // when set: only this source
}

// NewSourceParams names the source a document goes into (found or created).
type NewSourceParams struct {
	ID         string // used when the source is created
	CreatedBy  string
	ProjectID  string
	Name       string
	Visibility string // used when the source is created
	// Internal marks the source internal (kept once set): it answers questions but is never used
	// in generated content (KnowledgeSource.Internal).
	Internal bool
}

// AddDocumentResult says what AddDocument did.
type AddDocumentResult struct {
	Source    *KnowledgeSource
	Document  *KnowledgeDocument
	Duplicate bool // the source already held a document with the same hash: Document is that one
	// Retry: the source held the hash in a document that is not indexed and that no ingest is
	// working on (failed, or abandoned past IngestStale); Document is that one, claimed for this
	// ingest and back in uploading, so one hash never makes two documents.
	Retry bool
}

// NewDocument is one document of AddDocuments: its source and the document, as AddDocument takes them.
type NewDocument struct {
	Source   NewSourceParams
	Document *KnowledgeDocument
}

// VectorIndexStatus is the state of a driver's vector index (pgstore with pgvector), for /health:
// the index's size against the database's buffer cache, and the rows not in the index yet.
type VectorIndexStatus struct {
	IndexBytes        int64 // the HNSW index, on disk
	SharedBufferBytes int64 // PostgreSQL's shared_buffers
	Pending           int64 // embeddings the background indexer has not moved into the index yet, counted up to PendingLimit
	// PendingLimit is the backlog past which the indexer no longer holds rows pending while
	// writes go on (every search scans them exactly): Pending at it means at least that many.
	PendingLimit int64
}

// VectorIndexReporter is a driver that has a vector index to report on (pgstore with pgvector).
type VectorIndexReporter interface {
	VectorIndexStatus(ctx context.Context) (VectorIndexStatus, error)
}

// PrewarmStatus is the state of a driver's prewarm of the knowledge tables into the database
// server's caches (pgstore: after each start of PostgreSQL, see its prewarm.go), for /health.
type PrewarmStatus struct {
	// State is "off" (the driver was opened without it), "unavailable" (the database has no
	// pg_prewarm this host may use; Reason says why), "waiting" (another host of the database is
	// prewarming it), "running", "done" or "failed" (Reason).
	State  string
	Reason string
	// Autoprewarm: the server restores its buffers itself after a restart (its autoprewarm
	// worker runs: pg_prewarm in shared_preload_libraries), seen when State is unavailable.
	Autoprewarm bool
	ServerStart time.Time // the start of PostgreSQL the last prewarm was for
	Started     time.Time
	Finished    time.Time // zero while it runs
	BufferBytes int64     // read into shared buffers
	CacheBytes  int64     // read into the operating system's page cache
	LeftBytes   int64     // of the relations searches use, past both caches' room: left to the searches
}

// PrewarmReporter is a driver that prewarms the database's caches (pgstore). PrewarmStatus is
// cheap: the driver's own record, no query.
type PrewarmReporter interface {
	PrewarmStatus() PrewarmStatus
}

// IngestStale is how long a document written without a lease (before migration 0290) may stay
// uploading or parsing before a new upload of the same file takes it over. A document with a lease
// is taken over as soon as its lease runs out. Should a slow ingest still finish, the document is
// indexed once: WriteChunks refuses a document already indexed.
const IngestStale = 15 * time.Minute

// DocumentStatusParams moves a document to Status (SetDocumentStatus).
type DocumentStatusParams struct {
	ID     string
	Status string // DocParsing, DocFailed, ...
	Error  string // what a failed document shows; "" for the other statuses
}

// ListKnowledgeParams pages the sources or documents Viewer may read (ListSources, ListDocuments).
type ListKnowledgeParams struct {
	Viewer        Viewer
	Limit, Offset int
}

// SourceChunksParams pages the chunks of a source in id order (SourceChunks).
type SourceChunksParams struct {
	SourceID string
	AfterID  string // the last chunk of the previous page; "": from the first
	Limit    int
}

// FeedbackParams rates a logged query (SetFeedback).
type FeedbackParams struct {
	QueryID string
	Rating  int
	Notes   string
}

// WriteChunksParams is a document's chunks and embeddings, written in one transaction.
type WriteChunksParams struct {
	DocumentID string
	Chunks     []KnowledgeChunk
}

// SearchParams is one leg of a search: the keyword leg (KeywordCandidates) or the vector leg
// (VectorCandidates). The stores return candidates; host/kb/rank ranks them, on every path.
type SearchParams struct {
	Viewer Viewer
	Terms  []string // segmented distinct query terms (and those ChunkRow.TermFreq counts)
	// Vector is the query embedding. KeywordCandidates of a store whose VectorCandidates serves it
	// also returns each candidate's cosine with it (ChunkRow.Vector), which spares the search a
	// VectorCandidates call for the keyword candidates its nearest neighbours did not include.
	Vector []float32
	Model  string // embedding model of Vector
	Limit  int    // candidates
	// VectorCandidates: chunks (the keyword leg's candidates) whose cosine with Vector to return
	// besides the nearest neighbours.
	ChunkIDs []string
}

// TermStats are the keyword index's statistics that BM25 needs, over every chunk whoever may
// read it.
type TermStats struct {
	Docs   int            // chunks
	AvgLen float64        // mean terms per chunk (token_count)
	DF     map[string]int // chunks holding each term asked for, 0 for a term no chunk holds
}

// EmbeddingRef names a chunk and its active embedding model.
type EmbeddingRef struct {
	ChunkID string
	Model   string
}

// KnowledgeQuery is one logged search or ask (the audit log).
type KnowledgeQuery struct {
	ID             string          `json:"id"`
	UserID         string          `json:"user_id"`
	ProjectID      string          `json:"project_id"`
	Mode           string          `json:"mode"`
	QueryText      string          `json:"query_text"`
	TopK           int             `json:"top_k"`
	LatencyMS      float64         `json:"latency_ms"`
	Results        json.RawMessage `json:"results"`
	AnswerText     string          `json:"answer_text"`
	Citations      json.RawMessage `json:"citations"`
	Cited          bool            `json:"cited"`
	FeedbackRating *int            `json:"feedback_rating"`
	FeedbackNotes  string          `json:"feedback_notes"`
	CreatedAt      time.Time       `json:"created_at"`
}

// QueryStats are the figures of GET /api/knowledge/metrics.
type QueryStats struct {
	Asks, Searches  int       // totals
	RecentAsks      int       // asks in the window
	RecentCited     int       // of those, answers with at least one citation
	AskLatencies    []float64 // the window's asks, ms
	SearchLatencies []float64 // the window's searches, ms
	FeedbackCount   int
	RatingSum       int
}

// Fact is a user's key and value.
type Fact struct {
	ID        string    `json:"id"`
	UserID    string    `json:"user_id"`
	Key       string    `json:"key"`
	Value     string    `json:"value"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Knowledge stores knowledge sources, documents, chunks, embeddings, queries and facts.
type Knowledge interface {
	// AddDocument finds or creates the source and adds doc to it, raising the source's version, in
	// one transaction; a document with the same file hash in that source is returned instead
	// (Duplicate) and nothing changes, unless that document is failed or abandoned: then doc
	// takes it over (Retry, see AddDocumentResult) and doc.ID becomes its id.
	AddDocument(ctx context.Context, src NewSourceParams, doc *KnowledgeDocument) (*AddDocumentResult, error)
	// AddDocuments is AddDocument for each of docs, in order, in one transaction (a batch's
	// documents: one commit instead of one each); on an error none is added.
	AddDocuments(ctx context.Context, docs []NewDocument) ([]*AddDocumentResult, error)
	// RenewDocumentLeases extends the leases of the documents holder is ingesting.
	RenewDocumentLeases(ctx context.Context, holder string, lease time.Duration) (int64, error)
	// FailAbandonedDocuments fails, with reason, the documents left uploading or parsing by a
	// holder whose lease ran out, and (host not "") those held by any life of host: a host calls it
	// with its own id at start, before it ingests anything.
	FailAbandonedDocuments(ctx context.Context, host, reason string) (int64, error)
	// SetDocumentStatus moves a document to status (with an error message for failed); an
	// indexed document is not moved (ErrConflict).
	SetDocumentStatus(ctx context.Context, p DocumentStatusParams) error
	// WriteChunks writes a document's chunks and embeddings and marks it indexed with its chunk
	// count, in one transaction (filling the vector column where the database has one), and
	// returns the document as the write left it (an ingest answers with it without reading it
	// again); a document indexed already is ErrConflict and nothing is written.
	WriteChunks(ctx context.Context, p WriteChunksParams) (*KnowledgeDocument, error)
	// WriteChunksBatch is WriteChunks for several documents in one transaction (on PostgreSQL one
	// statement for all their chunks), returning the documents as the write left them, in no
	// particular order; if any of them is indexed already it is ErrConflict and nothing is written.
	WriteChunksBatch(ctx context.Context, docs []WriteChunksParams) ([]*KnowledgeDocument, error)
	// GetSource and GetDocument return ErrNotFound for unknown ids (visibility is the caller's).
	GetSource(ctx context.Context, id string) (*KnowledgeSource, error)
	GetDocument(ctx context.Context, id string) (*KnowledgeDocument, error)
	// CanRead reports whether v may read the source.
	CanRead(ctx context.Context, v Viewer, sourceID string) (bool, error)
	// ListSources lists the sources p.Viewer may read, newest first.
	ListSources(ctx context.Context, p ListKnowledgeParams) ([]KnowledgeSource, int, error)
	// ListDocuments lists the documents of the sources p.Viewer may read (its SourceID narrows),
	// newest first.
	ListDocuments(ctx context.Context, p ListKnowledgeParams) ([]KnowledgeDocument, int, error)
	// KeywordCandidates returns the best keyword matches v may read (driver full text: FTS5 bm25 or
	// ts_rank), best first, Keyword set to the driver's rank.
	KeywordCandidates(ctx context.Context, p SearchParams) ([]ChunkRow, error)
	// TermStats returns the number of chunks, their mean length and each term's document
	// frequency over the whole keyword index, whoever may read the chunks: the statistics of
	// kb's BM25 (host/kb/rank), the same on every driver for the same corpus. Drivers cache them
	// for a while and drop them at their own writes; PostgreSQL estimates them on large tables.
	TermStats(ctx context.Context, terms []string) (TermStats, error)
	// EmbeddingRefs lists the chunks v may read with their active embedding model.
	EmbeddingRefs(ctx context.Context, v Viewer) ([]EmbeddingRef, error)
	// Embeddings loads the vectors of refs (missing ones are left out).
	Embeddings(ctx context.Context, refs []EmbeddingRef) (map[string][]float32, error)
	// ChunksByID loads chunks (without embeddings) in any order.
	ChunksByID(ctx context.Context, ids []string) ([]ChunkRow, error)
	// VectorCandidates is the vector leg through the database's vector index: the p.Limit chunks
	// v may read whose embeddings (of p.Model) are nearest to p.Vector, then those of
	// p.ChunkIDs that v may read and that have such an embedding and are not among them (with
	// p.Limit 0, those alone), each with Vector set to its cosine with p.Vector clamped to 0..1. ErrNotSupported when the
	// driver has no vector index (the host then scans the vectors itself).
	VectorCandidates(ctx context.Context, p SearchParams) ([]ChunkRow, error)
	// SourceChunks lists up to p.Limit chunks of a source in id order, those after p.AfterID ("":
	// from the first), so a reindex reads a large source a page at a time.
	SourceChunks(ctx context.Context, p SourceChunksParams) ([]ChunkRow, error)
	// AddEmbeddings writes vectors of model beside the existing ones.
	AddEmbeddings(ctx context.Context, model string, vecs map[string][]float32) error
	// SwitchEmbeddings makes model the active one of every chunk of the source and drops the others.
	SwitchEmbeddings(ctx context.Context, sourceID, model string) error

	// LogQuery stores a search or ask.
	LogQuery(ctx context.Context, q *KnowledgeQuery) error
	// GetQuery returns a logged query.
	GetQuery(ctx context.Context, id string) (*KnowledgeQuery, error)
	// SetFeedback stores (replaces) the rating and notes of a query.
	SetFeedback(ctx context.Context, p FeedbackParams) error
	// QueryStats sums the queries of userID ("" for everyone) over the most recent window of each mode.
	QueryStats(ctx context.Context, userID string, window int) (*QueryStats, error)

	// DeleteDocument removes a document with its chunks, their embeddings (the vector index's
	// rows with them) and their keyword index entries, and raises its source's version, in one
	// transaction; it returns the ids of the chunks removed. ErrNotFound for an unknown id.
	DeleteDocument(ctx context.Context, id string) (chunkIDs []string, err error)

	// PutFact stores (replaces) a user's fact.
	PutFact(ctx context.Context, f *Fact) error
	// DeleteFact removes userID's fact whose id or key is idOrKey; ErrNotFound when none.
	DeleteFact(ctx context.Context, userID, idOrKey string) error
	// ListFacts lists a user's facts by key.
	ListFacts(ctx context.Context, userID string) ([]Fact, error)
}
