package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/pgstore"
	"github.com/reelforge/reelforge/host/store/storetest"
)

// pieceDoc adds a new document of n chunks to write (not written yet) and returns it with its
// chunks.
func pieceDoc(t *testing.T, d *pgstore.Driver, user string, n int) (*store.KnowledgeDocument, []store.KnowledgeChunk) {
	t.Helper()
	res, err := d.AddDocument(context.Background(), store.NewSourceParams{CreatedBy: user, Name: "pieces", Visibility: store.VisibilityPrivate},
		&store.KnowledgeDocument{ID: uuid.NewString(), UserID: user, Title: "t", Filename: "f.txt", FileHash: uuid.NewString(),
			ParseStatus: store.DocParsing})
	if err != nil {
		t.Fatalf("AddDocument: %v", err)
	}
	chunks := make([]store.KnowledgeChunk, n)
	for i := range chunks {
		text := fmt.Sprintf("piece chunk %d of the document words%d", i, i)
		chunks[i] = store.KnowledgeChunk{ID: uuid.NewString(), SourceID: res.Source.ID, DocumentID: res.Document.ID, Index: i, Text: text,
			SearchText: storetest.SearchText(text), TokenCount: len(storetest.Terms(text)), EmbeddingModel: storetest.Model, Embedding: storetest.Vector(text)}
	}
	return res.Document, chunks
}

// pieces yields chunks in pieces of size, calling before(i) before it yields piece i.
func pieces(chunks []store.KnowledgeChunk, size int, before func(i int) error) func() ([]store.KnowledgeChunk, bool, error) {
	i := 0
	return func() ([]store.KnowledgeChunk, bool, error) {
		if err := before(i); err != nil {
			return nil, false, err
		}
		p := chunks[i*size : min(len(chunks), (i+1)*size)]
		i++
		return p, i*size >= len(chunks), nil
	}
}

// storedRows counts the chunk and embedding rows of a document.
func storedRows(t *testing.T, d *pgstore.Driver, docID string) (chunks, embeddings int) {
	t.Helper()
	err := d.Pool().QueryRow(context.Background(), `SELECT (SELECT COUNT(*) FROM knowledge_chunks WHERE document_id = $1),
		(SELECT COUNT(*) FROM knowledge_embeddings e JOIN knowledge_chunks c ON c.id = e.chunk_id WHERE c.document_id = $1)`, docID).
		Scan(&chunks, &embeddings)
	if err != nil {
		t.Fatalf("count rows: %v", err)
	}
	return chunks, embeddings
}

// TestWriteChunkPieces: WriteChunkPieces writes every piece of a document and marks it indexed in
// one transaction, the server writing the first pieces before the last is yielded (the overlap it
// is for: a store that gathered the pieces and wrote them at the end never holds the chunks
// table's lock before the last piece); a failure while the pieces come, a document indexed
// already and a document gone leave nothing written; and the pool's connection serves again.
func TestWriteChunkPieces(t *testing.T) {
	t.Parallel()
	for _, vector := range []bool{true, false} {
		t.Run(fmt.Sprintf("vector=%v", vector), func(t *testing.T) {
			t.Parallel()
			d, ok := openWith(t, vector).(*pgstore.Driver)
			if !ok || d.SupportsVectorSearch() != vector {
				t.Skip("pgvector unavailable")
			}
			ctx := context.Background()
			u := storetest.NewUser(t, d, "")

			// Every piece written, the document indexed with the count, as stored.
			doc, chunks := pieceDoc(t, d, u.ID, 10)
			var writing bool // the first pieces were at the server before the last was yielded
			written, err := d.WriteChunkPieces(ctx, doc.ID, pieces(chunks, 4, func(i int) error {
				if i == 2 {
					writing = serverWriting(t, d)
				}
				return nil
			}))
			if err != nil {
				t.Fatalf("WriteChunkPieces: %v", err)
			}
			stored, err := d.GetDocument(ctx, doc.ID)
			if err != nil {
				t.Fatalf("GetDocument: %v", err)
			}
			if written.ParseStatus != store.DocIndexed || written.ChunkCount != 10 || !reflect.DeepEqual(written, stored) {
				t.Errorf("WriteChunkPieces returned %+v, want the document as stored: %+v (indexed, 10 chunks)", written, stored)
			}
			if c, e := storedRows(t, d, doc.ID); c != 10 || e != 10 {
				t.Errorf("stored %d chunks and %d embeddings, want 10 and 10", c, e)
			}
			if !writing {
				t.Errorf("the server held no lock of the chunks table before the last piece: the pieces were not sent as they came")
			}

			// A failure at the third piece: nothing of the document written, still parsing.
			doc, chunks = pieceDoc(t, d, u.ID, 10)
			boom := errors.New("the embedder failed")
			_, err = d.WriteChunkPieces(ctx, doc.ID, pieces(chunks, 4, func(i int) error {
				if i == 2 {
					return boom
				}
				return nil
			}))
			if !errors.Is(err, boom) {
				t.Errorf("WriteChunkPieces failing at the third piece = %v, want %v", err, boom)
			}
			if c, e := storedRows(t, d, doc.ID); c != 0 || e != 0 {
				t.Errorf("after a failed write: %d chunks and %d embeddings stored, want none", c, e)
			}
			if got, err := d.GetDocument(ctx, doc.ID); err != nil || got.ParseStatus != store.DocParsing || got.ChunkCount != 0 {
				t.Errorf("after a failed write: document %+v, %v; want parsing, no chunks", got, err)
			}

			// The same document written again: the connection was given back clean.
			if _, err := d.WriteChunkPieces(ctx, doc.ID, pieces(chunks, 4, func(int) error { return nil })); err != nil {
				t.Fatalf("WriteChunkPieces after a failed one: %v", err)
			}
			// Indexed already: a conflict, and nothing more written (the first pieces rolled back).
			again := make([]store.KnowledgeChunk, len(chunks))
			for i, c := range chunks {
				c.ID = uuid.NewString()
				again[i] = c
			}
			_, err = d.WriteChunkPieces(ctx, doc.ID, pieces(again, 4, func(int) error { return nil }))
			if !errors.Is(err, store.ErrConflict) {
				t.Errorf("WriteChunkPieces of a document indexed already = %v, want ErrConflict", err)
			}
			if c, e := storedRows(t, d, doc.ID); c != 10 || e != 10 {
				t.Errorf("after the conflict: %d chunks and %d embeddings stored, want 10 and 10", c, e)
			}

			// A document gone: not found, nothing written.
			gone, chunks := pieceDoc(t, d, u.ID, 6)
			if _, err := d.DeleteDocument(ctx, gone.ID); err != nil {
				t.Fatalf("DeleteDocument: %v", err)
			}
			if _, err := d.WriteChunkPieces(ctx, gone.ID, pieces(chunks, 4, func(int) error { return nil })); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("WriteChunkPieces of a deleted document = %v, want ErrNotFound", err)
			}
			if c, e := storedRows(t, d, gone.ID); c != 0 || e != 0 {
				t.Errorf("for a deleted document: %d chunks and %d embeddings stored, want none", c, e)
			}
		})
	}
}

// serverWriting reports whether another connection of d holds a write lock on the chunks table
// (a piece's statement ran in a transaction still open), waiting for it up to 30 s: the statement
// was sent, but the server may not have read it yet.
func serverWriting(t *testing.T, d *pgstore.Driver) bool {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		var held bool
		err := d.Pool().QueryRow(context.Background(), `SELECT EXISTS (SELECT 1 FROM pg_locks
			WHERE relation = to_regclass('knowledge_chunks') AND mode = 'RowExclusiveLock' AND pid <> pg_backend_pid())`).Scan(&held)
		if err != nil {
			t.Fatalf("pg_locks: %v", err)
		}
		if held {
			return true
		}
	}
	return false
}
