package pgstore_test

import (
	"context"
	"testing"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/pgstore"
	"github.com/reelforge/reelforge/host/store/storetest"
)

// TestSwitchingVectorPath: a database moved between the in-memory path (KB_VECTOR_SEARCH=off) and
// pgvector keeps every vector findable both ways. What the in-memory path wrote (float32 bytes
// only) is moved into the halfvec column when pgvector is switched on, pending for the indexer;
// what pgvector wrote (halfvec only, no bytes) is read back by the in-memory path.
func TestSwitchingVectorPath(t *testing.T) {
	ctx := context.Background()
	schema := storetest.SchemaName()
	off, err := pgstore.Open(ctx, storetest.PostgresURL(t), pgstore.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	user := storetest.NewUser(t, off, "")
	texts := map[string]bool{"lighting for a night shoot": true, "night lighting with one lamp": true}
	for tx := range texts {
		addChunks(t, off, user.ID, tx)
	}
	off.Close()

	on := openSchema(t, schema, pgstore.Options{ManualIndexer: true})
	if n := pending(t, on); n != 2 {
		t.Fatalf("pending after switching pgvector on = %d, want the 2 vectors written without it", n)
	}
	wantVectorHits(t, on, user.ID, 2)
	addChunks(t, on, user.ID, "a hook in the first three seconds")
	texts["a hook in the first three seconds"] = true
	var bytes int
	if err := on.Pool().QueryRow(ctx, `SELECT COUNT(*) FROM knowledge_embeddings WHERE embedding IS NOT NULL`).Scan(&bytes); err != nil || bytes != 0 {
		t.Fatalf("rows with float32 bytes beside the halfvec = %d, %v; want 0", bytes, err)
	}
	wantVectorHits(t, on, user.ID, 3)
	// Inside a transaction too, the pgvector path reads the halfvec column (a transaction's
	// Driver once lost that setting and read the float32 bytes, which pgvector never writes).
	var refs3 []store.EmbeddingRef
	rows3, err := on.Pool().Query(ctx, `SELECT chunk_id, model FROM knowledge_embeddings`)
	if err != nil {
		t.Fatal(err)
	}
	for rows3.Next() {
		var r store.EmbeddingRef
		if err := rows3.Scan(&r.ChunkID, &r.Model); err != nil {
			t.Fatal(err)
		}
		refs3 = append(refs3, r)
	}
	rows3.Close()
	err = on.InTx(ctx, func(tx store.Driver) error {
		got, err := tx.Embeddings(ctx, refs3)
		if err == nil && len(got) != 3 {
			t.Errorf("Embeddings in a transaction on the pgvector path = %d vectors, want 3", len(got))
		}
		for id, v := range got {
			if len(v) != storetest.VectorDims {
				t.Errorf("vector of %s read in a transaction: %d dimensions, want %d", id, len(v), storetest.VectorDims)
			}
		}
		return err
	})
	if err != nil {
		t.Fatalf("Embeddings in a transaction on the pgvector path: %v", err)
	}

	off, err = pgstore.Open(ctx, storetest.PostgresURL(t), pgstore.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer off.Close()
	rows, err := on.Pool().Query(ctx, `SELECT e.chunk_id, e.model, c.chunk_text FROM knowledge_embeddings e JOIN knowledge_chunks c ON c.id = e.chunk_id`)
	if err != nil {
		t.Fatal(err)
	}
	var refs []store.EmbeddingRef
	text := map[string]string{}
	for rows.Next() {
		var r store.EmbeddingRef
		var tx string
		if err := rows.Scan(&r.ChunkID, &r.Model, &tx); err != nil {
			t.Fatal(err)
		}
		refs, text[r.ChunkID] = append(refs, r), tx
	}
	if err := rows.Err(); err != nil || len(refs) != 3 {
		t.Fatalf("embedding rows = %d, %v", len(refs), err)
	}
	got, err := off.Embeddings(ctx, refs)
	if err != nil || len(got) != 3 {
		t.Fatalf("Embeddings on the in-memory path = %d vectors, %v; want 3", len(got), err)
	}
	for id, v := range got {
		if len(v) != storetest.VectorDims {
			t.Fatalf("vector of %q read back: %d dimensions", text[id], len(v))
		}
		if c := cosine(v, storetest.Vector(text[id])); c < 0.999 {
			t.Errorf("vector of %q read back: cosine %.4f with the one written", text[id], c)
		}
	}
}
