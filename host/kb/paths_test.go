package kb_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/reelforge/reelforge/host/kb"
	"github.com/reelforge/reelforge/host/kb/embed"
	"github.com/reelforge/reelforge/host/store"
)

// pathCorpus is a fixed corpus of English and Chinese documents built from a small vocabulary,
// each document of its own length (so no two chunks tie on BM25 by accident), one of them long
// enough for several chunks; and the queries to run on it, some sharing no word with any document
// but a stem (the vector leg's additions).
func pathCorpus() (docs []string, queries []string) {
	en := []string{"hook", "opening", "shot", "reel", "caption", "rhythm", "music", "cover", "lighting", "budget",
		"microphone", "grading", "colour", "script", "teaser", "thumbnail", "audience", "retention", "editing", "transition"}
	zh := []string{"完播率", "短视频", "封面", "脚本", "直播", "转化率", "选品", "话术", "剪辑", "字幕"}
	r := rand.New(rand.NewPCG(24, 3))
	for i := 0; i < 48; i++ {
		var b strings.Builder
		for w := 0; w < 6+i; w++ {
			if i%4 == 3 {
				b.WriteString(zh[int(float64(len(zh))*r.Float64()*r.Float64())])
				if w%5 == 4 {
					b.WriteString("。")
				}
				continue
			}
			if w > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(en[int(float64(len(en))*r.Float64()*r.Float64())])
		}
		docs = append(docs, b.String())
	}
	var long []string
	for i := 0; i < 300; i++ {
		long = append(long, en[(i*7)%len(en)])
	}
	docs = append(docs, strings.Join(long, " "))
	queries = []string{"hook opening", "caption rhythm music", "lighting budget", "microphone", "colour grading script",
		"retention of the audience", "thumbnail teaser", "transition", "editing shots", "microphones and budgets", "reels with captions",
		"完播率", "短视频封面", "直播转化率", "字幕剪辑", "hook 脚本"}
	return docs, queries
}

// TestOneRankingOnEveryPath: the three search paths (SQLite; PostgreSQL with pgvector, whose
// vector leg is the HNSW index; PostgreSQL without, whose vector leg is the in-memory scan) give
// the same top 10 for the same corpus and query, with the same scores; and on each, the hybrid
// keeps the keyword leg's BM25 ranking and only adds after it (the local embedder is not
// semantic), so no query's hit ranks lower than under BM25 alone.
func TestOneRankingOnEveryPath(t *testing.T) {
	docs, queries := pathCorpus()
	type hit struct {
		key                    string // document title and chunk index: ids differ between databases
		vector, keyword, total float64
	}
	results := map[string][][]hit{}
	for _, name := range []string{"sqlite", "postgres", "postgres-novector"} {
		t.Run(name, func(t *testing.T) {
			d := drivers[name](t)
			if name == "postgres" && !d.SupportsVectorSearch() {
				t.Skip("pgvector is not available")
			}
			ctx := context.Background()
			hybrid, bm25 := kb.New(d, kb.Options{}), kb.New(d, kb.Options{KeywordOnly: true})
			user := "00000000-0000-0000-0000-0000000000aa"
			for i, text := range docs {
				ingest(t, hybrid, kb.IngestParams{UserID: user, SourceName: "paths", Visibility: store.VisibilityPrivate,
					Title: fmt.Sprintf("doc-%02d", i), Text: text})
			}
			var got [][]hit
			for _, q := range queries {
				p := kb.SearchParams{UserID: user, Query: q, TopK: 10}
				hs, err := hybrid.Search(ctx, p)
				if err != nil {
					t.Fatalf("search %q: %v", q, err)
				}
				base, err := bm25.Search(ctx, p)
				if err != nil {
					t.Fatalf("BM25 search %q: %v", q, err)
				}
				var row []hit
				for _, h := range hs {
					row = append(row, hit{fmt.Sprintf("%s#%d", h.DocumentTitle, h.ChunkIndex), h.Scores.Vector, h.Scores.Keyword, h.Scores.Total})
				}
				got = append(got, row)
				if len(base) > len(hs) {
					t.Fatalf("%q: BM25 alone has %d hits, the hybrid %d", q, len(base), len(hs))
				}
				for i, b := range base {
					if hs[i].ChunkID != b.ChunkID {
						t.Errorf("%q: hit %d is %s#%d, BM25 alone has %s#%d there", q, i+1, hs[i].DocumentTitle, hs[i].ChunkIndex, b.DocumentTitle, b.ChunkIndex)
					}
				}
				for _, h := range hs[len(base):] {
					if h.Scores.Keyword != 0 {
						t.Errorf("%q: the hybrid adds a keyword match BM25 alone left out: %+v", q, h.Scores)
					}
				}
			}
			results[name] = got
		})
	}
	ref, ok := results["sqlite"]
	if !ok {
		return
	}
	added := 0
	for name, got := range results {
		for qi, q := range queries {
			a, b := ref[qi], got[qi]
			same := len(a) == len(b)
			for i := 0; same && i < len(a); i++ {
				same = a[i].key == b[i].key && abs(a[i].keyword-b[i].keyword) < 1e-3 && abs(a[i].total-b[i].total) < 2e-3
			}
			if !same {
				t.Errorf("%q: %s's top 10 %v differs from sqlite's %v", q, name, b, a)
			}
			if name == "sqlite" {
				for _, h := range a {
					if h.keyword == 0 {
						added++
					}
				}
				if len(a) == 0 {
					t.Errorf("%q: no hits", q)
				}
			}
		}
	}
	if added == 0 {
		t.Errorf("no query got a hit from the vector leg alone: the corpus does not test the vector leg's additions")
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// allCosines is a store whose keyword leg returns every row's cosine with qv (on the pgvector
// path), as it did for every search before kb read the hits' cosines after ranking; it counts the
// calls for cosines of given chunks alone (VectorCandidates with Limit 0).
type allCosines struct {
	store.Driver
	qv    []float32
	asked atomic.Int32
}

func (a *allCosines) KeywordCandidates(ctx context.Context, p store.SearchParams) ([]store.ChunkRow, error) {
	if a.qv != nil {
		p.Vector = a.qv
	}
	return a.Driver.KeywordCandidates(ctx, p)
}

func (a *allCosines) VectorCandidates(ctx context.Context, p store.SearchParams) ([]store.ChunkRow, error) {
	if p.Limit == 0 && len(p.ChunkIDs) > 0 {
		a.asked.Add(1)
	}
	return a.Driver.VectorCandidates(ctx, p)
}

// TestHitsCosinesAfterRanking: with the local (non-semantic) embedder the pgvector path reads the
// cosines of the hits alone, after ranking, where the keyword leg read those of all its rows; the
// hits and every reported score are the same as with the cosines of all rows (allCosines), with
// and without a metadata filter (which ranks more hits than it returns), on every path. The legs
// take few candidates, so the vector leg misses most keyword hits and their cosines come late.
func TestHitsCosinesAfterRanking(t *testing.T) {
	docs, queries := pathCorpus()
	for _, name := range []string{"sqlite", "postgres", "postgres-novector"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := drivers[name](t)
			ctx := context.Background()
			late, ref := &allCosines{Driver: d}, &allCosines{Driver: d}
			opt := kb.Options{Candidates: 4}
			s, all := kb.New(late, opt), kb.New(ref, opt)
			user := "00000000-0000-0000-0000-0000000000ab"
			for i, text := range docs {
				ingest(t, s, kb.IngestParams{UserID: user, SourceName: "paths", Visibility: store.VisibilityPrivate,
					Title: fmt.Sprintf("doc-%02d", i), Text: text, Metadata: json.RawMessage(fmt.Sprintf(`{"half":"%d"}`, i%2))})
			}
			emb := embed.NewLocal()
			filtered := 0
			for _, q := range queries {
				vs, err := emb.Embed(ctx, []string{q})
				if err != nil {
					t.Fatal(err)
				}
				ref.qv = vs[0]
				for _, meta := range []map[string]string{nil, {"half": "1"}} {
					p := kb.SearchParams{UserID: user, Query: q, TopK: 10, Metadata: meta}
					got, err := s.Search(ctx, p)
					if err != nil {
						t.Fatalf("search %q: %v", q, err)
					}
					want, err := all.Search(ctx, p)
					if err != nil {
						t.Fatalf("search %q with all cosines: %v", q, err)
					}
					if (meta == nil && len(got) == 0) || len(got) != len(want) {
						t.Fatalf("%q %v: %d hits, %d with all cosines", q, meta, len(got), len(want))
					}
					for i := range got {
						if got[i].ChunkID != want[i].ChunkID || got[i].Scores.Vector != want[i].Scores.Vector {
							t.Errorf("%q %v: hit %d is %s %+v, with all cosines %s %+v", q, meta, i+1,
								got[i].ChunkID, got[i].Scores, want[i].ChunkID, want[i].Scores)
						}
					}
					if meta != nil {
						filtered += len(got)
					}
				}
			}
			if filtered == 0 {
				t.Errorf("no search with the metadata filter had a hit")
			}
			if name == "postgres" && d.SupportsVectorSearch() && late.asked.Load() == 0 {
				t.Errorf("no search read its hits' cosines after ranking: the test misses that path")
			}
			if ref.asked.Load() != 0 {
				t.Errorf("with all cosines from the keyword leg, %d searches still asked for some", ref.asked.Load())
			}
		})
	}
}

// hideAfterKeyword is allCosines whose index scan does not return the chunks of the document
// hide (as the scan misses most keyword hits at scale), and which deletes that document once the
// keyword leg has read its rows: a hit deleted between the legs.
type hideAfterKeyword struct {
	allCosines
	svc  *kb.Service
	user string
	hide string
}

func (x *hideAfterKeyword) KeywordCandidates(ctx context.Context, p store.SearchParams) ([]store.ChunkRow, error) {
	rows, err := x.allCosines.KeywordCandidates(ctx, p)
	if err == nil && x.hide != "" {
		_, err = x.svc.DeleteDocument(ctx, x.user, true, x.hide)
	}
	return rows, err
}

func (x *hideAfterKeyword) VectorCandidates(ctx context.Context, p store.SearchParams) ([]store.ChunkRow, error) {
	rows, err := x.allCosines.VectorCandidates(ctx, p)
	var out []store.ChunkRow
	for _, r := range rows {
		if r.DocumentID != x.hide || p.Limit == 0 {
			out = append(out, r)
		}
	}
	return out, err
}

// TestHitsCosinesAfterRankingDeleted: a hit deleted between the keyword leg and the late read of
// the hits' cosines leaves the hits after it the vector scores of a search after the delete, where
// its missing cosine (0) capped their totals at its keyword score. (The scan finds every chunk but
// the deleted one's, so the first hits after the delete are those of the search that lost it;
// their keyword scores differ a little, the deleted chunk's terms counted among the candidates.)
func TestHitsCosinesAfterRankingDeleted(t *testing.T) {
	ctx := context.Background()
	d := drivers["postgres"](t)
	if !d.SupportsVectorSearch() {
		t.Skip("pgvector unavailable")
	}
	user := "00000000-0000-0000-0000-0000000000ab"
	x := &hideAfterKeyword{allCosines: allCosines{Driver: d}, user: user}
	x.svc = kb.New(x, kb.Options{Candidates: 10})
	for i, text := range []string{"hook hook opening shot reel", "hook opening shot caption rhythm", "hook opening shot reel music",
		"hook opening caption rhythm music", "hook cover lighting budget", "hook shot reel"} {
		ingest(t, x.svc, kb.IngestParams{UserID: user, SourceName: "paths", Visibility: store.VisibilityPrivate,
			Title: fmt.Sprintf("doc-%d", i), Text: text})
	}
	p := kb.SearchParams{UserID: user, Query: "hook opening shot", TopK: 5}
	before, err := x.svc.Search(ctx, p)
	if err != nil || len(before) < 4 {
		t.Fatalf("search: %d hits, %v", len(before), err)
	}
	x.hide = before[1].DocumentID
	got, err := x.svc.Search(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	x.hide = ""
	want, err := x.svc.Search(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(before)-1 || len(want) < len(got) {
		t.Fatalf("after deleting hit 2 of %d: %d hits, then %d", len(before), len(got), len(want))
	}
	late := 0.0
	for i := range got {
		if got[i].ChunkID != want[i].ChunkID || got[i].Scores.Vector != want[i].Scores.Vector {
			t.Errorf("hit %d: %s %+v, after the delete %s %+v", i+1, got[i].ChunkID, got[i].Scores, want[i].ChunkID, want[i].Scores)
		}
		late += got[i].Scores.Vector
	}
	if x.asked.Load() == 0 || late == 0 {
		t.Errorf("no hit's cosine read after ranking: the test misses that path")
	}
}

// noIndexPath is a store that reports vector search but whose index path does not serve the
// query (store.ErrNotSupported: pgstore's answer to a vector of other dimensions), so the search
// takes the in-memory scan.
type noIndexPath struct{ store.Driver }

func (noIndexPath) SupportsVectorSearch() bool { return true }
func (noIndexPath) VectorCandidates(context.Context, store.SearchParams) ([]store.ChunkRow, error) {
	return nil, store.ErrNotSupported
}

// localRenamed is renamed not semantic, as the local embedder (renamed hides its Semantic).
type localRenamed struct{ renamed }

func (localRenamed) Semantic() bool { return false }

// TestSearchWithoutIndexPath: when the store's index path answers ErrNotSupported, the search
// takes the in-memory scan and gives the hits of the path without a vector index, with the
// scores: a hit without a vector of the model keeps the cosine 0, not read late through the path
// that does not serve the query (which failed the search).
func TestSearchWithoutIndexPath(t *testing.T) {
	d := drivers["sqlite"](t)
	ctx := context.Background()
	user := "00000000-0000-0000-0000-0000000000ac"
	docs, queries := pathCorpus()
	for i, text := range docs[:12] {
		ingest(t, kb.New(d, kb.Options{}), kb.IngestParams{UserID: user, SourceName: "paths", Visibility: store.VisibilityPrivate,
			Title: fmt.Sprintf("doc-%02d", i), Text: text})
	}
	// The renamed model has no vectors: every keyword hit is one without a cosine.
	for _, emb := range []embed.Embedder{embed.NewLocal(), localRenamed{renamed{embed.NewLocal(), "local-renamed"}}} {
		got, want := kb.New(noIndexPath{d}, kb.Options{Embedder: emb}), kb.New(d, kb.Options{Embedder: emb})
		hits := 0
		for _, q := range queries {
			p := kb.SearchParams{UserID: user, Query: q, TopK: 10}
			g, err := got.Search(ctx, p)
			if err != nil {
				t.Fatalf("%s, search %q: %v", emb.Model(), q, err)
			}
			w, err := want.Search(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if len(g) != len(w) {
				t.Fatalf("%s, %q: %d hits, %d without a vector index", emb.Model(), q, len(g), len(w))
			}
			for i := range g {
				if g[i].ChunkID != w[i].ChunkID || g[i].Scores != w[i].Scores {
					t.Errorf("%s, %q: hit %d is %s %+v, without a vector index %s %+v", emb.Model(), q, i+1, g[i].ChunkID, g[i].Scores, w[i].ChunkID, w[i].Scores)
				}
			}
			hits += len(g)
		}
		if hits == 0 {
			t.Errorf("%s: no hits", emb.Model())
		}
	}
}
