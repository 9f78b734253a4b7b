package pgstore

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

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
// per document.
func TestAddDocumentsRoundTrips(t *testing.T) {
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
	var n atomic.Int64
	db := sqldb.New(poolConn{counted{d.pool, &n}}, func(ctx context.Context) (sqldb.Tx, error) {
		n.Add(2) // BEGIN, and the COMMIT or ROLLBACK
		tx, err := d.pool.Begin(ctx)
		if err != nil {
			return nil, err
		}
		return txConn{poolConn{counted{tx, &n}}, tx}, nil
	}, dialect, nil)
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
	t.Logf("AddDocuments of %d new documents into one source: %d round trips", group, n.Load())
	if got := n.Load(); got > 7 {
		t.Errorf("AddDocuments of %d documents = %d round trips, want 7 at most", group, got)
	}
	n.Store(0)
	if _, err := db.AddDocument(ctx, src, &store.KnowledgeDocument{ID: uuid.NewString(), UserID: u.ID, Filename: "f.txt", FileHash: "one"}); err != nil {
		t.Fatalf("AddDocument: %v", err)
	}
	t.Logf("AddDocument: %d round trips", n.Load())
	if got := n.Load(); got > 7 {
		t.Errorf("AddDocument = %d round trips, want 7 at most", got)
	}
}
