// The Service itself: what it needs of the store, its options, its constructor and the field limits
// shared by its routes.

package kb

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/reelforge/reelforge/host/kb/embed"
	"github.com/reelforge/reelforge/host/kb/llm"
	"github.com/reelforge/reelforge/host/kb/rank"
	"github.com/reelforge/reelforge/host/store"
)

// Store is what the service needs of the database, by concern.
type Store interface {
	// Ingest and delete.
	AddDocument(ctx context.Context, src store.NewSourceParams, doc *store.KnowledgeDocument) (*store.AddDocumentResult, error)
	AddDocuments(ctx context.Context, docs []store.NewDocument) ([]*store.AddDocumentResult, error)
	SetDocumentStatus(ctx context.Context, p store.DocumentStatusParams) error
	WriteChunks(ctx context.Context, p store.WriteChunksParams) (*store.KnowledgeDocument, error)
	WriteChunksBatch(ctx context.Context, docs []store.WriteChunksParams) ([]*store.KnowledgeDocument, error)
	GetSource(ctx context.Context, id string) (*store.KnowledgeSource, error)
	GetDocument(ctx context.Context, id string) (*store.KnowledgeDocument, error)
	DeleteDocument(ctx context.Context, id string) (chunkIDs []string, err error)
	ParallelWrites() bool

	// Search (keyword and vector legs, the vector cache).
	KeywordCandidates(ctx context.Context, p store.SearchParams) ([]store.ChunkRow, error)
	TermStats(ctx context.Context, terms []string) (store.TermStats, error)
	ChunksByID(ctx context.Context, ids []string) ([]store.ChunkRow, error)
	VectorCandidates(ctx context.Context, p store.SearchParams) ([]store.ChunkRow, error)
	SupportsVectorSearch() bool
	EmbeddingRefs(ctx context.Context, v store.Viewer) ([]store.EmbeddingRef, error)
	Embeddings(ctx context.Context, refs []store.EmbeddingRef) (map[string][]float32, error)

	// Reindex to another embedding model.
	SourceChunks(ctx context.Context, p store.SourceChunksParams) ([]store.ChunkRow, error)
	AddEmbeddings(ctx context.Context, model string, vecs map[string][]float32) error
	SwitchEmbeddings(ctx context.Context, sourceID, model string) error

	// The query log: audit, feedback, metrics.
	LogQuery(ctx context.Context, q *store.KnowledgeQuery) error
	GetQuery(ctx context.Context, id string) (*store.KnowledgeQuery, error)
	SetFeedback(ctx context.Context, p store.FeedbackParams) error
	QueryStats(ctx context.Context, userID string, window int) (*store.QueryStats, error)

	// Facts.
	PutFact(ctx context.Context, f *store.Fact) error
	DeleteFact(ctx context.Context, userID, idOrKey string) error
	ListFacts(ctx context.Context, userID string) ([]store.Fact, error)
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
	Candidates    int            // per leg of every path; 0: 100
	VectorCacheMB int            // KB_VECTOR_CACHE_MB: budget of the decoded vectors; 0: DefaultVectorCacheMB, below 0: none
	// KeywordOnly leaves out the vector leg: hits are the keyword leg's, by BM25 alone. The
	// benchmark's baseline for the hybrid, over the same chunks and the same store.
	KeywordOnly bool
	Logger      *slog.Logger
	// Holder names the host life that ingests (documents it adds are held by it under a lease of
	// Lease, which the host renews: see store.Knowledge.RenewDocumentLeases). Empty: documents are
	// held by nobody and only IngestStale frees one whose ingest died.
	Holder string
	Lease  time.Duration
	// SameContentWait bounds how long an ingest waits for another one of the same content into
	// the same source to end (Ingest); 0: DefaultSameContentWait.
	SameContentWait time.Duration
}

// DefaultSameContentWait is how long an ingest waits, by default, for another ingest of the same
// content (two identical batches sent at once) to end before it answers 409. A batch of 100 texts
// of a few KB takes about a second here; the wait stays under the server's shutdown timeout (15 s)
// so that a graceful stop does not cut off a request still waiting (the API's request context
// is not cancelled when a client hangs up).
const DefaultSameContentWait = 10 * time.Second

// Service is the knowledge base: ingest, search, ask, audit, eval and facts. It is safe for
// concurrent use.
type Service struct {
	st    Store
	emb   embed.Embedder
	opt   Options
	log   *slog.Logger
	mu    sync.RWMutex
	cache *vecCache             // decoded vectors (chunks never change in place), within a budget
	gen   uint64                // bumped by every write of this service
	refs  map[string]*refsEntry // viewer -> readable embedded chunks, for refsTTL or until gen moves
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
	if opt.SameContentWait <= 0 {
		opt.SameContentWait = DefaultSameContentWait
	}
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opt.VectorCacheMB == 0 {
		opt.VectorCacheMB = DefaultVectorCacheMB
	}
	budget := int64(max(opt.VectorCacheMB, 0)) << 20
	return &Service{st: st, emb: opt.Embedder, opt: opt, log: log, cache: newVecCache(budget), refs: map[string]*refsEntry{}}
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
