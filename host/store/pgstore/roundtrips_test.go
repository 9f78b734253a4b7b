package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/sqldb"
	"github.com/reelforge/reelforge/host/store/storetest"
)

// counted counts the statements sent through it: on PostgreSQL each is a round trip.
type counted struct {
	q pgQuerier
	n *atomic.Int64
}

func (c counted) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	c.n.Add(1)
	return c.q.Exec(ctx, sql, args...)
}

func (c counted) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	c.n.Add(1)
	return c.q.Query(ctx, sql, args...)
}

func (c counted) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	c.n.Add(1)
	return c.q.QueryRow(ctx, sql, args...)
}

// TestAddDocumentsRoundTrips: adding a kb.BatchGroup of new documents into one source takes a
// fixed handful of statements (sources, the hash lookup, one INSERT, one version raise), not a few
// per document; into a source that exists, the source is locked with one statement.
func TestAddDocumentsRoundTrips(t *testing.T) {
	ctx := context.Background()
	d, db, n := openCounted(t, Options{})
	u := storetest.NewUser(t, d, "")
	src := store.NewSourceParams{CreatedBy: u.ID, Name: "group", Visibility: store.VisibilityPrivate}
	const group = 16 // kb.BatchGroup
	docs := make([]store.NewDocument, group)
	for i := range docs {
		docs[i] = store.NewDocument{Source: src, Document: &store.KnowledgeDocument{ID: uuid.NewString(), UserID: u.ID,
			Filename: "f.txt", FileHash: fmt.Sprint("hash ", i)}}
	}
	if _, err := db.AddDocuments(ctx, docs); err != nil {
		t.Fatalf("AddDocuments: %v", err)
	}
	t.Logf("AddDocuments of %d new documents into a new source: %d round trips", group, n.Load())
	if got := n.Load(); got > 8 {
		t.Errorf("AddDocuments of %d documents into a new source = %d round trips, want 8 at most", group, got)
	}
	n.Store(0)
	if _, err := db.AddDocument(ctx, src, &store.KnowledgeDocument{ID: uuid.NewString(), UserID: u.ID, Filename: "f.txt", FileHash: "one"}); err != nil {
		t.Fatalf("AddDocument: %v", err)
	}
	t.Logf("AddDocument into the source: %d round trips", n.Load())
	if got := n.Load(); got > 6 {
		t.Errorf("AddDocument into an existing source = %d round trips, want 6 at most", got)
	}
}

// countedBatch counts the batches sent through it: each is one round trip.
type countedBatch struct {
	b batchSender
	n *atomic.Int64
}

func (c countedBatch) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	c.n.Add(1)
	return c.b.SendBatch(ctx, b)
}

// TestAddDocumentOneRoundTrip: AddDocument of a new document into a source that exists, an
// ingest's case, is one round trip (addNew); a duplicate and an internal upload into a source that
// is not internal yet take sqldb's path and answer as before.
func TestAddDocumentOneRoundTrip(t *testing.T) {
	ctx := context.Background()
	d, db, n := openCounted(t, Options{})
	cd := &Driver{DB: db, pool: d.pool, lazy: db, df: d.df, batch: countedBatch{d.pool, n}}
	u := storetest.NewUser(t, d, "")
	src := store.NewSourceParams{CreatedBy: u.ID, Name: "one", Visibility: store.VisibilityPrivate}
	doc := func(hash string) *store.KnowledgeDocument {
		return &store.KnowledgeDocument{ID: uuid.NewString(), UserID: u.ID, Title: "t " + hash, Filename: "f.txt", FileHash: hash,
			FileSize: 7, MimeType: "text/plain", ParseStatus: store.DocParsing, Metadata: []byte(`{"k": 1}`)}
	}
	first, err := cd.AddDocument(ctx, src, doc("a"))
	if err != nil {
		t.Fatalf("AddDocument into a new source: %v", err)
	}
	n.Store(0)
	res, err := cd.AddDocument(ctx, src, doc("b"))
	if err != nil {
		t.Fatalf("AddDocument: %v", err)
	}
	if got := n.Load(); got != 1 {
		t.Errorf("AddDocument of a new document into an existing source = %d round trips, want 1", got)
	}
	if res.Duplicate || res.Retry || res.Source.ID != first.Source.ID || res.Source.Version != first.Source.Version+1 {
		t.Errorf("AddDocument = duplicate %v, retry %v, source %s version %d; want a new document in %s, version %d",
			res.Duplicate, res.Retry, res.Source.ID, res.Source.Version, first.Source.ID, first.Source.Version+1)
	}
	stored, err := d.GetDocument(ctx, res.Document.ID)
	if err != nil {
		t.Fatalf("GetDocument: %v", err)
	}
	if stored.SourceID != res.Document.SourceID || stored.Title != "t b" || stored.FileHash != "b" || stored.FileSize != 7 ||
		stored.MimeType != "text/plain" || stored.ParseStatus != store.DocParsing || string(stored.Metadata) != `{"k": 1}` {
		t.Errorf("stored %+v, answered %+v; want the document as given", stored, res.Document)
	}
	dup, err := cd.AddDocument(ctx, src, doc("b"))
	if err != nil || !dup.Duplicate || dup.Document.ID != res.Document.ID || dup.Source.Version != res.Source.Version {
		t.Errorf("AddDocument(same hash) = %+v, %v; want a duplicate of %s, source version %d", dup, err, res.Document.ID, res.Source.Version)
	}
	internal := src
	internal.Internal = true
	in, err := cd.AddDocument(ctx, internal, doc("c"))
	if err != nil || in.Duplicate || !in.Source.Internal() || in.Source.Version != res.Source.Version+1 {
		t.Fatalf("AddDocument(internal) = %+v, %v; want a new document, the source internal", in, err)
	}
	if s, err := d.GetSource(ctx, in.Source.ID); err != nil || !s.Internal() {
		t.Errorf("source after an internal upload: %+v, %v; want internal", s, err)
	}
}

// TestWriteChunksRoundTrips: the write of one document's chunks is one statement, with no
// transaction around it (the statement is one), and still writes nothing for a document that is
// indexed already.
func TestWriteChunksRoundTrips(t *testing.T) {
	ctx := context.Background()
	d, db, n := openCounted(t, Options{VectorSearch: true, ManualIndexer: true})
	cd := &Driver{DB: db, pool: d.pool, vector: d.vector, half: d.half, df: d.df}
	u := storetest.NewUser(t, d, "")
	added, err := d.AddDocument(ctx, store.NewSourceParams{CreatedBy: u.ID, Name: "rt", Visibility: store.VisibilityPrivate},
		&store.KnowledgeDocument{ID: uuid.NewString(), UserID: u.ID, Filename: "f.txt", FileHash: "h", ParseStatus: store.DocParsing})
	if err != nil {
		t.Fatalf("AddDocument: %v", err)
	}
	doc := added.Document
	chunks := func() []store.KnowledgeChunk {
		out := make([]store.KnowledgeChunk, 3)
		for i := range out {
			v := make([]float32, vectorDims)
			v[i] = 1
			out[i] = store.KnowledgeChunk{ID: uuid.NewString(), SourceID: doc.SourceID, DocumentID: doc.ID, Index: i,
				Text: fmt.Sprint("chunk ", i), SearchText: fmt.Sprint("chunk ", i), EmbeddingModel: "m", Embedding: v}
		}
		return out
	}
	written, err := cd.WriteChunks(ctx, store.WriteChunksParams{DocumentID: doc.ID, Chunks: chunks()})
	if err != nil {
		t.Fatalf("WriteChunks: %v", err)
	}
	if got := n.Load(); got != 1 {
		t.Errorf("WriteChunks of one document = %d round trips, want 1", got)
	}
	if written.ParseStatus != store.DocIndexed || written.ChunkCount != 3 {
		t.Errorf("WriteChunks returned %+v; want the document indexed with 3 chunks", written)
	}
	got, err := d.GetDocument(ctx, doc.ID)
	if err != nil || got.ParseStatus != store.DocIndexed || got.ChunkCount != 3 {
		t.Fatalf("after WriteChunks: %+v, %v; want indexed with 3 chunks", got, err)
	}
	if _, err := cd.WriteChunks(ctx, store.WriteChunksParams{DocumentID: doc.ID, Chunks: chunks()}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("WriteChunks of an indexed document = %v, want ErrConflict", err)
	}
	var rows, vecs int
	if err := d.pool.QueryRow(ctx, `SELECT (SELECT COUNT(*) FROM knowledge_chunks WHERE document_id = $1),
		(SELECT COUNT(*) FROM knowledge_embeddings e JOIN knowledge_chunks c ON c.id = e.chunk_id WHERE c.document_id = $1)`, doc.ID).Scan(&rows, &vecs); err != nil {
		t.Fatal(err)
	}
	if rows != 3 || vecs != 3 {
		t.Errorf("the document has %d chunks and %d embeddings, want 3 and 3 (the second write left nothing)", rows, vecs)
	}
}

// TestAddDocumentsLazyCommit: AddDocuments' transaction commits without waiting for the WAL
// flush, and only it: the setting does not stay on the pooled connection.
func TestAddDocumentsLazyCommit(t *testing.T) {
	url := storetest.PostgresURL(t)
	schema := storetest.SchemaName()
	ctx := context.Background()
	d, err := Open(ctx, url, Options{Schema: schema})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		d.Close()
		storetest.DropSchema(url, schema)
	})
	var before, inside string
	if err := d.pool.QueryRow(ctx, `SHOW synchronous_commit`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	if before == "off" {
		t.Skip("the server commits without waiting for the WAL flush anyway")
	}
	if err := d.lazy.WithTx(ctx, func(tx *sqldb.DB) error {
		return tx.QueryRow(ctx, `SHOW synchronous_commit`).Scan(&inside)
	}); err != nil {
		t.Fatal(err)
	}
	if inside != "off" {
		t.Errorf("synchronous_commit in AddDocuments' transaction = %q, want off", inside)
	}
	u := storetest.NewUser(t, d, "")
	if _, err := d.AddDocument(ctx, store.NewSourceParams{CreatedBy: u.ID, Name: "lazy", Visibility: store.VisibilityPrivate},
		&store.KnowledgeDocument{ID: uuid.NewString(), UserID: u.ID, Filename: "f.txt", FileHash: "h"}); err != nil {
		t.Fatalf("AddDocument: %v", err)
	}
	// One connection: the one the transactions ran on.
	d.pool.Reset()
	if err := d.lazy.WithTx(ctx, func(tx *sqldb.DB) error { return nil }); err != nil {
		t.Fatal(err)
	}
	var after string
	if err := d.pool.QueryRow(ctx, `SHOW synchronous_commit`).Scan(&after); err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("synchronous_commit after the transaction = %q, want the connection's own %q", after, before)
	}
}

// openCounted opens a store of opt in a schema of its own, and a sqldb.DB on its pool that counts
// the round trips of its statements in n (BEGIN and COMMIT included).
func openCounted(t *testing.T, opt Options) (d *Driver, db *sqldb.DB, n *atomic.Int64) {
	t.Helper()
	url := storetest.PostgresURL(t)
	opt.Schema = storetest.SchemaName()
	d, err := Open(context.Background(), url, opt)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		d.Close()
		storetest.DropSchema(url, opt.Schema)
	})
	n = new(atomic.Int64)
	db = sqldb.New(poolConn{counted{d.pool, n}}, func(ctx context.Context) (sqldb.Tx, error) {
		n.Add(2) // BEGIN, and the COMMIT or ROLLBACK
		tx, err := d.pool.Begin(ctx)
		if err != nil {
			return nil, err
		}
		return txConn{poolConn{counted{tx, n}}, tx}, nil
	}, dialect, nil)
	return d, db, n
}

// TestIngestPlansUseIndexes: the statements of one document a call find its rows in
// knowledge_documents by index in the plan pgx's prepared statements run after their first five
// calls, the generic one, which the planner makes from the table's size at that time (small, and
// never re-made while no ANALYZE runs): a sequential scan there reads every document at each call.
func TestIngestPlansUseIndexes(t *testing.T) {
	ctx := context.Background()
	d, _, _ := openCounted(t, Options{VectorSearch: true, ManualIndexer: true, NoPrewarm: true})
	if !d.vector {
		t.Skip("pgvector unavailable")
	}
	// A few documents, as when pgx makes the generic plan (its sixth call).
	u := storetest.NewUser(t, d, "")
	for i := range 5 {
		if _, err := d.AddDocument(ctx, store.NewSourceParams{CreatedBy: u.ID, Name: "plans", Visibility: store.VisibilityPrivate},
			&store.KnowledgeDocument{ID: uuid.NewString(), UserID: u.ID, Filename: "f.txt", FileHash: fmt.Sprint("hash ", i)}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := d.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if _, err := c.Exec(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	for name, q := range map[string]string{"addNewSQL": addNewSQL, "writeChunkHalfSQL": writeChunkHalfSQL} {
		if _, err := c.Exec(ctx, `PREPARE p AS `+q); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var n int
		if err := c.QueryRow(ctx, `SELECT cardinality(parameter_types) FROM pg_prepared_statements WHERE name = 'p'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		nulls := strings.TrimSuffix(strings.Repeat("NULL, ", n), ", ")
		plan := strings.Join(queryStrings(t, c, `EXPLAIN EXECUTE p(`+nulls+`)`), "\n")
		if strings.Contains(plan, "Seq Scan on knowledge_documents") {
			t.Errorf("%s: the generic plan scans knowledge_documents:\n%s", name, plan)
		}
		if _, err := c.Exec(ctx, `DEALLOCATE p`); err != nil {
			t.Fatal(err)
		}
	}
}

// queryStrings is the first column of q's rows.
func queryStrings(t *testing.T, c *pgxpool.Conn, q string) []string {
	t.Helper()
	rows, err := c.Query(context.Background(), q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}
