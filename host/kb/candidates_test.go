package kb

import (
	"testing"

	"github.com/reelforge/reelforge/host/store"
)

// bestByBM25 reorders a store's keyword matches by BM25 with the whole index's statistics and
// keeps the best n. The store ranked "short" first: FTS5 gives "reel", held by most chunks, no
// weight, so only the rare "hook" counts and the shorter chunk wins. BM25 weighs "reel" too, and
// "long", which holds it three times, is the better match.
func TestBestByBM25(t *testing.T) {
	rows := []store.ChunkRow{
		{ID: "short", SearchText: "hook opening"},
		{ID: "long", SearchText: "hook reel reel reel"},
		{ID: "none", SearchText: "opening shot"},
	}
	stats := store.TermStats{Docs: 100, AvgLen: 3, DF: map[string]int{"hook": 2, "reel": 60}}
	got, _ := bestByBM25([]string{"hook", "reel"}, rows, 2, stats)
	if len(got) != 2 || got[0].ID != "long" || got[1].ID != "short" {
		ids := []string{}
		for _, r := range got {
			ids = append(ids, r.ID)
		}
		t.Fatalf("bestByBM25 = %v, want [long short]", ids)
	}
}
