package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/store"
)

// testKnowledgeBatch: AddDocuments adds each document as AddDocument would (a repeated hash in the
// same call is a duplicate of the first), WriteChunksBatch writes and indexes several documents at
// once, and a batch holding a document indexed already writes nothing. A chunk written is found
// by the vector search at once (pgvector: before any indexer has run, by its exact scan).
func testKnowledgeBatch(t *testing.T, open Opener) {
	ctx := context.Background()
	d := open(t)
	u := NewUser(t, d, "")
	src := store.NewSourceParams{CreatedBy: u.ID, Name: "batch", Visibility: store.VisibilityPrivate}
	newDoc := func(hash string) store.NewDocument {
		return store.NewDocument{Source: src, Document: &store.KnowledgeDocument{ID: uuid.NewString(), UserID: u.ID, Title: "t",
			Filename: "f.txt", FileHash: hash, ParseStatus: store.DocParsing}}
	}
	docs := []store.NewDocument{newDoc("h1"), newDoc("h2"), newDoc("h1")}
	added, err := d.AddDocuments(ctx, docs)
	if err != nil || len(added) != 3 {
		t.Fatalf("AddDocuments = %v, %v", added, err)
	}
	if added[0].Duplicate || added[1].Duplicate || !added[2].Duplicate || added[2].Document.ID != added[0].Document.ID {
		t.Fatalf("AddDocuments: duplicates %v %v %v; want only the third, of the first", added[0].Duplicate, added[1].Duplicate, added[2].Duplicate)
	}
	if added[0].Source.ID != added[1].Source.ID {
		t.Fatalf("AddDocuments made two sources of one")
	}
	write := func(doc *store.KnowledgeDocument, texts ...string) store.WriteChunksParams {
		p := store.WriteChunksParams{DocumentID: doc.ID}
		for i, tx := range texts {
			p.Chunks = append(p.Chunks, store.KnowledgeChunk{ID: uuid.NewString(), SourceID: added[0].Source.ID, DocumentID: doc.ID,
				Index: i, Text: tx, SearchText: SearchText(tx), EmbeddingModel: Model, Embedding: Vector(tx)})
		}
		return p
	}
	one, two := added[0].Document, added[1].Document
	if err := d.WriteChunksBatch(ctx, []store.WriteChunksParams{write(one, "aardvark lighting at night", "a second aardvark chunk"),
		write(two, "a budget microphone for interviews")}); err != nil {
		t.Fatalf("WriteChunksBatch: %v", err)
	}
	for doc, n := range map[*store.KnowledgeDocument]int{one: 2, two: 1} {
		got, err := d.GetDocument(ctx, doc.ID)
		if err != nil || got.ParseStatus != store.DocIndexed || got.ChunkCount != n {
			t.Errorf("document after WriteChunksBatch = %+v, %v; want indexed, %d chunks", got, err, n)
		}
	}
	v := store.Viewer{UserID: u.ID}
	if ids := keywordIDs(t, d, v, "aardvark"); !ids[one.ID] || len(ids) != 1 {
		t.Errorf("keyword search for aardvark: %v", ids)
	}
	if d.SupportsVectorSearch() {
		rows, err := d.VectorCandidates(ctx, store.SearchParams{Viewer: v, Vector: Vector("budget microphone"), Model: Model, Limit: 3})
		if err != nil || len(rows) != 3 {
			t.Errorf("VectorCandidates right after the write = %d rows, %v; want 3", len(rows), err)
		}
	}
	// A batch with a document indexed already: a conflict, and its other document stays unwritten.
	third, err := d.AddDocument(ctx, src, newDoc("h3").Document)
	if err != nil {
		t.Fatal(err)
	}
	err = d.WriteChunksBatch(ctx, []store.WriteChunksParams{write(third.Document, "a zebu in the frame"), write(one, "aardvark again")})
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("WriteChunksBatch with an indexed document = %v, want ErrConflict", err)
	}
	if got, err := d.GetDocument(ctx, third.Document.ID); err != nil || got.ParseStatus == store.DocIndexed {
		t.Errorf("the batch's other document = %+v, %v; want it not indexed", got, err)
	}
	if ids := keywordIDs(t, d, v, "zebu"); len(ids) != 0 {
		t.Errorf("chunks of a batch that failed were written: %v", fmt.Sprint(ids))
	}
}
