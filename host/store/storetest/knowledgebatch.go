package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
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
	written, err := d.WriteChunksBatch(ctx, []store.WriteChunksParams{write(one, "aardvark lighting at night", "a second aardvark chunk"),
		write(two, "a budget microphone for interviews")})
	if err != nil {
		t.Fatalf("WriteChunksBatch: %v", err)
	}
	answered := map[string]*store.KnowledgeDocument{}
	for _, doc := range written {
		answered[doc.ID] = doc
	}
	if len(written) != 2 || len(answered) != 2 {
		t.Errorf("WriteChunksBatch answered %d documents (%d distinct), want the 2 written", len(written), len(answered))
	}
	for doc, n := range map[*store.KnowledgeDocument]int{one: 2, two: 1} {
		got, err := d.GetDocument(ctx, doc.ID)
		if err != nil || got.ParseStatus != store.DocIndexed || got.ChunkCount != n {
			t.Errorf("document after WriteChunksBatch = %+v, %v; want indexed, %d chunks", got, err, n)
		}
		if err == nil && !reflect.DeepEqual(answered[doc.ID], got) {
			t.Errorf("WriteChunksBatch answered %+v for a document stored as %+v", answered[doc.ID], got)
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
	_, err = d.WriteChunksBatch(ctx, []store.WriteChunksParams{write(third.Document, "a zebu in the frame"), write(one, "aardvark again")})
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

// testKnowledgeBatchAsSingles: AddDocuments gives what AddDocument one document at a time gives,
// on two databases set up alike: the same results (a new document, a duplicate of a stored one, a
// failed one taken over, a hash repeated in the call, a document without a hash, a source marked
// internal on the way) and the same sources, versions and documents afterwards.
func testKnowledgeBatchAsSingles(t *testing.T, open Opener) {
	ctx := context.Background()
	userID := uuid.NewString()
	srcA := store.NewSourceParams{ID: uuid.NewString(), CreatedBy: userID, Name: "a", Visibility: store.VisibilityPrivate}
	srcB := store.NewSourceParams{ID: uuid.NewString(), CreatedBy: userID, Name: "b", Visibility: store.VisibilityOrg}
	internalA := srcA
	internalA.Internal = true
	storedID, failedID := uuid.NewString(), uuid.NewString()
	type item struct {
		src        store.NewSourceParams
		id, hash   string
		wantDup    bool
		wantRetry  bool
		wantSameAs int // the item whose document this one's is, -1: its own
	}
	items := []item{
		{srcA, uuid.NewString(), "h1", false, false, -1},
		{srcB, uuid.NewString(), "h2", false, false, -1},
		{srcA, uuid.NewString(), "stored", true, false, -1},
		{srcB, uuid.NewString(), "failed", false, true, -1},
		{srcA, uuid.NewString(), "h1", true, false, 0},
		{srcA, uuid.NewString(), "", false, false, -1},
		{srcB, uuid.NewString(), "failed", true, false, 3},
		{internalA, uuid.NewString(), "h3", false, false, -1},
		{srcA, uuid.NewString(), "stored", true, false, -1},
		{srcB, uuid.NewString(), "h2", true, false, 1},
	}
	setup := func() store.Driver {
		d := open(t)
		u := &store.User{ID: userID, Email: "batch-" + userID[:8] + "@example.com", Username: "b" + userID[:8], PasswordHash: "x",
			Role: store.RoleFreeUser}
		if err := d.CreateUser(ctx, u); err != nil {
			t.Fatalf("CreateUser: %v", err)
		}
		for _, s := range []struct {
			src        store.NewSourceParams
			id, hash   string
			status     string
			errMessage string
		}{{srcA, storedID, "stored", store.DocIndexed, ""}, {srcB, failedID, "failed", store.DocFailed, "no text"}} {
			if _, err := d.AddDocument(ctx, s.src, &store.KnowledgeDocument{ID: s.id, UserID: userID, Filename: "old.txt", FileHash: s.hash}); err != nil {
				t.Fatalf("AddDocument: %v", err)
			}
			if err := d.SetDocumentStatus(ctx, store.DocumentStatusParams{ID: s.id, Status: s.status, Error: s.errMessage}); err != nil {
				t.Fatalf("SetDocumentStatus: %v", err)
			}
		}
		return d
	}
	docs := func() []store.NewDocument {
		out := make([]store.NewDocument, len(items))
		for i, it := range items {
			out[i] = store.NewDocument{Source: it.src, Document: &store.KnowledgeDocument{ID: it.id, UserID: userID,
				Title: fmt.Sprint("t", i), Filename: fmt.Sprint("f", i, ".txt"), FileHash: it.hash, FileSize: int64(i)}}
		}
		return out
	}
	batch, single := setup(), setup()
	got, err := batch.AddDocuments(ctx, docs())
	if err != nil || len(got) != len(items) {
		t.Fatalf("AddDocuments = %v, %v", got, err)
	}
	var want []*store.AddDocumentResult
	for _, nd := range docs() {
		r, err := single.AddDocument(ctx, nd.Source, nd.Document)
		if err != nil {
			t.Fatalf("AddDocument: %v", err)
		}
		want = append(want, r)
	}
	type view struct {
		Duplicate, Retry          bool
		DocID, DocSource, DocFile string
		DocStatus                 string
		SourceID                  string
		SourceVersion             int
		SourceInternal            bool
	}
	see := func(r *store.AddDocumentResult) view {
		return view{r.Duplicate, r.Retry, r.Document.ID, r.Document.SourceID, r.Document.Filename, r.Document.ParseStatus,
			r.Source.ID, r.Source.Version, r.Source.Internal()}
	}
	for i, it := range items {
		g, w := see(got[i]), see(want[i])
		if g != w {
			t.Errorf("item %d: AddDocuments gave %+v, AddDocument one at a time %+v", i, g, w)
		}
		wantID := it.id
		switch {
		case it.hash == "stored":
			wantID = storedID
		case it.hash == "failed":
			wantID = failedID
		case it.wantSameAs >= 0:
			wantID = items[it.wantSameAs].id
		}
		if g.Duplicate != it.wantDup || g.Retry != it.wantRetry || g.DocID != wantID {
			t.Errorf("item %d = %+v; want duplicate %v, retry %v, document %s", i, g, it.wantDup, it.wantRetry, wantID)
		}
	}
	for _, src := range []store.NewSourceParams{srcA, srcB} {
		g, err1 := batch.GetSource(ctx, src.ID)
		w, err2 := single.GetSource(ctx, src.ID)
		if err1 != nil || err2 != nil || g.Version != w.Version || g.Internal() != w.Internal() {
			t.Errorf("source %s after AddDocuments = %+v, %v; one at a time %+v, %v", src.Name, g, err1, w, err2)
		}
		list := func(d store.Driver) []string {
			docs, _, err := d.ListDocuments(ctx, store.ListKnowledgeParams{Viewer: store.Viewer{UserID: userID, SourceID: src.ID}, Limit: 100})
			if err != nil {
				t.Fatalf("ListDocuments: %v", err)
			}
			var out []string
			for _, doc := range docs {
				out = append(out, doc.ID+" "+doc.Filename+" "+doc.FileHash+" "+doc.ParseStatus+" "+fmt.Sprint(doc.FileSize))
			}
			sort.Strings(out)
			return out
		}
		if g, w := list(batch), list(single); fmt.Sprint(g) != fmt.Sprint(w) {
			t.Errorf("documents of %s after AddDocuments:\n%v\none at a time:\n%v", src.Name, g, w)
		}
	}
	if v := got[len(got)-1].Source.Version; v != 3 {
		t.Errorf("source b at the last item = version %d, want 3 (its first document, a new one, a retry)", v)
	}
}
