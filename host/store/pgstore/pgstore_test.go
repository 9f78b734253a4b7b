package pgstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/reelforge/reelforge/host/kb/embed"
	"github.com/reelforge/reelforge/host/kb/segment"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/pgstore"
	"github.com/reelforge/reelforge/host/store/storetest"
)

// open gives each test its own schema in the TEST_DATABASE_URL database, dropped afterwards.
func open(t *testing.T) store.Driver {
	t.Helper()
	return openWith(t, true)
}

func openWith(t *testing.T, vector bool) store.Driver {
	t.Helper()
	url := storetest.PostgresURL(t)
	schema := storetest.SchemaName()
	ctx := context.Background()
	d, err := pgstore.Open(ctx, url, pgstore.Options{Schema: schema, VectorSearch: vector})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		d.Close()
		if c, err := pgx.Connect(context.Background(), url); err == nil {
			_, _ = c.Exec(context.Background(), `DROP SCHEMA `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
			c.Close(context.Background())
		}
	})
	return d
}

func TestConformance(t *testing.T) { storetest.Run(t, open) }

func TestConformanceWithoutVector(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Driver { return openWith(t, false) })
}

func TestVectorPathReported(t *testing.T) {
	d := open(t)
	t.Logf("pgvector available: %v", d.SupportsVectorSearch())
	if off := openWith(t, false); off.SupportsVectorSearch() {
		t.Errorf("SupportsVectorSearch() with VectorSearch off = true, want false")
	}
}

// TestVectorSearchNotStarved: a reader who may see a few chunks among many nearer ones of another
// user still gets them from the vector leg alone (the HNSW scan goes on past the hidden rows).
func TestVectorSearchNotStarved(t *testing.T) {
	d := open(t)
	if !d.SupportsVectorSearch() {
		t.Skip("pgvector unavailable")
	}
	ctx := context.Background()
	a, b := storetest.NewUser(t, d, ""), storetest.NewUser(t, d, "")
	var many []string
	for i := 0; i < 300; i++ {
		many = append(many, fmt.Sprintf("zebrafish memo number %d about the quarterly plan", i))
	}
	addChunks(t, d, a.ID, many...)
	mine := addChunks(t, d, b.ID, "zebrafish memo for the launch", "zebrafish memo on lighting", "zebrafish memo draft")
	want := 3
	local := embed.NewLocal()
	rows, err := d.VectorSearch(ctx, store.SearchParams{Viewer: store.Viewer{UserID: b.ID}, Vector: local.Vector("zebrafish memo"),
		Model: local.Model(), Limit: 10, Floor: -1, Cap: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != want {
		t.Fatalf("VectorSearch = %d rows, want the reader's %d", len(rows), want)
	}
	for _, r := range rows {
		if r.DocumentID != mine[0] {
			t.Errorf("VectorSearch shows document %s of another user", r.DocumentID)
		}
	}
}

// addChunks writes texts as one private document of user, one chunk each, and returns its id.
func addChunks(t *testing.T, d store.Driver, user string, texts ...string) []string {
	t.Helper()
	ctx := context.Background()
	res, err := d.AddDocument(ctx, store.NewSourceParams{CreatedBy: user, Name: "s", Visibility: store.VisibilityPrivate},
		&store.KnowledgeDocument{ID: uuid.NewString(), UserID: user, Title: "t", Filename: "f.txt", FileHash: uuid.NewString()})
	if err != nil {
		t.Fatal(err)
	}
	local := embed.NewLocal()
	vecs, _ := local.Embed(ctx, texts)
	chunks := make([]store.KnowledgeChunk, len(texts))
	for i, tx := range texts {
		chunks[i] = store.KnowledgeChunk{ID: uuid.NewString(), SourceID: res.Source.ID, DocumentID: res.Document.ID, Index: i,
			Text: tx, SearchText: segment.IndexForm(tx), EmbeddingModel: local.Model(), Embedding: vecs[i]}
	}
	if err := d.WriteChunks(ctx, store.WriteChunksParams{DocumentID: res.Document.ID, Chunks: chunks}); err != nil {
		t.Fatal(err)
	}
	return []string{res.Document.ID}
}
