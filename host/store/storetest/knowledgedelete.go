package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/reelforge/reelforge/host/store"
)

// testKnowledgeDelete: a deleted document leaves no trace in any search path (keyword
// candidates, term statistics, embedding refs and vectors, the vector index), its source's
// version moves, and a second delete is ErrNotFound; facts are deleted by id or key, the
// owner's only.
func testKnowledgeDelete(t *testing.T, open Opener) {
	ctx := context.Background()
	d := open(t)
	u := NewUser(t, d, "")
	gone := AddDoc(t, d, u.ID, "", "s", store.VisibilityPrivate, "hook opening shot", "reel hook ending")
	kept := AddDoc(t, d, u.ID, "", "s", store.VisibilityPrivate, "hook close-up")
	v := store.Viewer{UserID: u.ID}
	if ids := keywordIDs(t, d, v, "hook"); !ids[gone.ID] || !ids[kept.ID] {
		t.Fatalf("before: keyword hits %v, want both documents", ids)
	}
	if st, err := d.TermStats(ctx, []string{"hook"}); err != nil || st.Docs != 3 || st.DF["hook"] != 3 {
		t.Fatalf("before: TermStats = %+v, %v", st, err)
	}
	before, err := d.GetSource(ctx, gone.SourceID)
	if err != nil {
		t.Fatal(err)
	}
	refsBefore, _ := d.EmbeddingRefs(ctx, v)

	chunkIDs, err := d.DeleteDocument(ctx, gone.ID)
	if err != nil || len(chunkIDs) != 2 {
		t.Fatalf("DeleteDocument = %v, %v; want its 2 chunk ids", chunkIDs, err)
	}
	if ids := keywordIDs(t, d, v, "hook"); ids[gone.ID] || !ids[kept.ID] {
		t.Errorf("after: keyword hits %v, want only the kept document", ids)
	}
	if st, err := d.TermStats(ctx, []string{"hook", "reel"}); err != nil || st.Docs != 1 || st.DF["hook"] != 1 || st.DF["reel"] != 0 {
		t.Errorf("after: TermStats = %+v, %v; want 1 chunk, hook 1, reel 0", st, err)
	}
	refs, err := d.EmbeddingRefs(ctx, v)
	if err != nil || len(refs) != 1 {
		t.Errorf("after: EmbeddingRefs = %v, %v; want the kept chunk", refs, err)
	}
	if vecs, err := d.Embeddings(ctx, refsBefore); err != nil || len(vecs) != 1 {
		t.Errorf("after: Embeddings of the old refs = %d vectors, %v; want only the kept one", len(vecs), err)
	}
	if d.SupportsVectorSearch() {
		rows, err := d.VectorCandidates(ctx, store.SearchParams{Viewer: v, Vector: Vector("hook opening shot"), Model: Model, Limit: 10,
			ChunkIDs: chunkIDs})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if r.DocumentID == gone.ID {
				t.Errorf("after: VectorCandidates found a chunk of the deleted document")
			}
		}
	}
	if _, err := d.GetDocument(ctx, gone.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after: GetDocument = %v, want ErrNotFound", err)
	}
	if after, err := d.GetSource(ctx, gone.SourceID); err != nil || after.Version != before.Version+1 {
		t.Errorf("source version %d -> %+v, %v; want raised by one", before.Version, after, err)
	}
	if _, err := d.DeleteDocument(ctx, gone.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second DeleteDocument = %v, want ErrNotFound", err)
	}

	other := NewUser(t, d, "")
	f := &store.Fact{ID: "f-" + u.ID, UserID: u.ID, Key: "tone", Value: "warm"}
	if err := d.PutFact(ctx, f); err != nil {
		t.Fatal(err)
	}
	if err := d.DeleteFact(ctx, other.ID, "tone"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("DeleteFact by another user = %v, want ErrNotFound", err)
	}
	if err := d.DeleteFact(ctx, u.ID, "tone"); err != nil {
		t.Errorf("DeleteFact(key) = %v", err)
	}
	if fs, _ := d.ListFacts(ctx, u.ID); len(fs) != 0 {
		t.Errorf("facts after the delete = %v, want none", fs)
	}
	if err := d.DeleteFact(ctx, u.ID, f.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("DeleteFact of a deleted fact = %v, want ErrNotFound", err)
	}
}
