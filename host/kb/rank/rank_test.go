package rank

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/reelforge/reelforge/host/kb/embed"
	"github.com/reelforge/reelforge/internal/segment"
)

var corpus = []string{
	"Creators must not repost other people's short videos; reposting leads to a ban.",
	"Our brand colour is teal and the logo must keep clear space around it.",
	"短视频平台禁止搬运他人作品，违者封号。",
	"Weekly analytics reports track watch time, completion rate and follower growth.",
}

// cands are the corpus's chunks with their cosine to query q under the local embedder.
func cands(q string) []Candidate {
	emb := embed.NewLocal()
	vs, _ := emb.Embed(context.Background(), corpus)
	qv := emb.Vector(q)
	out := make([]Candidate, len(corpus))
	for i, c := range corpus {
		out[i] = Candidate{ID: string(rune('a' + i)), Terms: segment.Terms(c), Cosine: Cosine(qv, vs[i])}
	}
	return out
}

// checkTotals: every hit's scores are in 0..1, its total is the weighted sum and the totals fall.
func checkTotals(t *testing.T, hits []Hit) {
	t.Helper()
	for i, h := range hits {
		if h.Total < 0 || h.Total > 1 || h.Keyword < 0 || h.Keyword > 1 || h.Vector < 0 || h.Vector > 1 {
			t.Fatalf("score out of range %+v", h)
		}
		if d := h.Total - (VectorWeight*h.Vector + KeywordWeight*h.Keyword); math.Abs(d) > 1e-9 {
			t.Fatalf("total %+v is not the weighted sum", h)
		}
		if i > 0 && h.Total > hits[i-1].Total {
			t.Fatalf("totals rise at %d: %+v after %+v", i, h, hits[i-1])
		}
	}
}

func TestScore(t *testing.T) {
	for _, semantic := range []bool{false, true} {
		q := "can I repost short videos?"
		hits := Score(segment.Query(q), cands(q), Options{TopK: 2, Semantic: semantic})
		if len(hits) == 0 || hits[0].ID != "a" {
			t.Fatalf("semantic %v: hits %+v", semantic, hits)
		}
		checkTotals(t, hits)
		if hits := Score(segment.Query("视频"), cands("视频"), Options{Semantic: semantic}); len(hits) == 0 || hits[0].ID != "c" {
			t.Fatalf("semantic %v: Chinese hits %+v", semantic, hits)
		}
	}
}

func TestFloorDropsGibberish(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 3000; i++ {
		b := make([]byte, 4+i%12)
		for j := range b {
			b[j] = byte('a' + rng.Intn(26))
		}
		if hits := Score(segment.Query(string(b)), cands(string(b)), Options{Semantic: i%2 == 0}); len(hits) != 0 {
			t.Fatalf("query %q: hits %+v", b, hits)
		}
	}
}

func TestCosine(t *testing.T) {
	if Cosine(nil, []float32{1}) != 0 || Cosine([]float32{1, 0}, []float32{-1, 0}) != 0 {
		t.Fatal("clamp")
	}
	if c := Cosine([]float32{1, 1}, []float32{2, 2}); c < 0.999 || c > 1 {
		t.Fatal(c)
	}
}

// TestKeywordRelativeSquared: the best candidate's keyword score is 1, the others' (s/max)²; a
// candidate with no query term scores 0.
func TestKeywordRelativeSquared(t *testing.T) {
	cs := []Candidate{
		{ID: "two", Terms: []string{"repost", "ban", "x"}},
		{ID: "one", Terms: []string{"repost", "y", "z"}},
		{ID: "none", Terms: []string{"logo", "teal", "z"}, Cosine: 0.9},
	}
	terms := []string{"repost", "ban"}
	bm := BM25(terms, cs, Options{})
	hits := Score(terms, cs, Options{TopK: 3})
	if len(hits) != 3 || hits[0].ID != "two" || hits[1].ID != "one" || hits[2].ID != "none" {
		t.Fatalf("hits %+v", hits)
	}
	if hits[0].Keyword != 1 || hits[2].Keyword != 0 || math.Abs(hits[1].Keyword-math.Pow(bm[1]/bm[0], 2)) > 1e-12 {
		t.Fatalf("keyword scores %+v, bm25 %v", hits, bm)
	}
	checkTotals(t, hits)
}

// TestNonSemanticKeepsBM25: with a non-semantic embedder, whatever the cosines, the hits are
// BM25's own ranking (the same candidates scored without vectors) followed by the candidates
// without a query term, by cosine; so no chunk ranks below where BM25 alone puts it. Random
// corpora, queries and cosines, not any benchmark set.
func TestNonSemanticKeepsBM25(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	words := make([]string, 60)
	for i := range words {
		words[i] = fmt.Sprintf("w%d", i)
	}
	pick := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = words[int(float64(len(words))*math.Pow(rng.Float64(), 2))] // Zipf-like
		}
		return out
	}
	for round := 0; round < 2000; round++ {
		cs := make([]Candidate, 5+rng.Intn(40))
		for i := range cs {
			cs[i] = Candidate{ID: fmt.Sprintf("c%03d", (i*37+round)%1000), Terms: pick(3 + rng.Intn(30)), Cosine: rng.Float64()}
		}
		terms := pick(1 + rng.Intn(4))
		df := map[string]int{}
		for _, tm := range terms {
			df[tm] = 1 + rng.Intn(2000)
		}
		opt := Options{TopK: 10, Stats: Stats{Docs: 5000, AvgLen: 15, DF: func(t string) int { return df[t] }}}
		hybrid := Score(terms, cs, opt)
		plain := make([]Candidate, len(cs))
		for i, c := range cs {
			plain[i] = Candidate{ID: c.ID, Terms: c.Terms}
		}
		bm25 := Score(terms, plain, opt)
		checkTotals(t, hybrid)
		for i, h := range bm25 {
			if i >= len(hybrid) || hybrid[i].Index != h.Index {
				t.Fatalf("round %d: hybrid %+v departs from BM25 %+v at %d", round, hybrid, bm25, i)
			}
		}
		for _, h := range hybrid[len(bm25):] {
			if h.Keyword != 0 || cs[h.Index].Cosine < Floor {
				t.Fatalf("round %d: an addition of the vector leg %+v has a keyword match or a cosine below the floor", round, h)
			}
		}
	}
}

// TestRescore: Score without Options.Semantic, given the candidates holding a query term with no
// cosine (0), then Rescore with their cosines, gives the hits and scores Score gives with every
// cosine from the start (kb reads the hits' cosines after ranking on the pgvector path), with
// TopK and the capping of totals along the order.
func TestRescore(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	words := make([]string, 40)
	for i := range words {
		words[i] = fmt.Sprintf("w%d", i)
	}
	pick := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = words[int(float64(len(words))*math.Pow(rng.Float64(), 2))]
		}
		return out
	}
	capped := 0
	for round := 0; round < 2000; round++ {
		cs := make([]Candidate, 5+rng.Intn(40))
		for i := range cs {
			cs[i] = Candidate{ID: fmt.Sprintf("c%03d", (i*37+round)%1000), Terms: pick(3 + rng.Intn(30)), Cosine: rng.Float64()}
		}
		terms := pick(1 + rng.Intn(4))
		opt := Options{TopK: 1 + rng.Intn(12)}
		want := Score(terms, cs, opt)
		bm := BM25(terms, cs, opt)
		late := slices.Clone(cs)
		for i := range late {
			if bm[i] > 0 {
				late[i].Cosine = 0
			}
		}
		got := Score(terms, late, opt)
		if len(got) != len(want) {
			t.Fatalf("round %d: %d hits without the cosines, %d with", round, len(got), len(want))
		}
		for i := range got {
			if got[i].Index != want[i].Index {
				t.Fatalf("round %d: hit %d is %s without the cosines, %s with", round, i, got[i].ID, want[i].ID)
			}
		}
		Rescore(got, cs)
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: rescored %+v, want %+v", round, got, want)
		}
		for _, h := range want {
			if h.Vector != cs[h.Index].Cosine {
				capped++
			}
		}
	}
	if capped == 0 {
		t.Fatalf("no hit's vector score was capped: the test misses the capping")
	}
}

// bm25Cands are n candidates of 150 terms each drawn from a vocabulary of 5,000 words, the shape
// a search at 100k chunks scores (a few hundred candidates), and a 3-term query.
func bm25Cands(n int) ([]string, []Candidate) {
	r := rand.New(rand.NewSource(1))
	word := func() string { return fmt.Sprintf("w%d", int(r.ExpFloat64()*500)%5000) }
	out := make([]Candidate, n)
	for i := range out {
		ts := make([]string, 150)
		for j := range ts {
			ts[j] = word()
		}
		out[i] = Candidate{ID: fmt.Sprint(i), Terms: ts}
	}
	return []string{"w3", "w40", "w700"}, out
}

// TestBM25FewTerms: a query of a few terms (looked up by a scan) scores every candidate as the
// same terms among many (looked up in a map) do: terms no candidate holds add nothing.
func TestBM25FewTerms(t *testing.T) {
	terms, cs := bm25Cands(300)
	st := Stats{Docs: 100_000, AvgLen: 150, DF: func(string) int { return 0 }}
	few := BM25(terms, cs, Options{Stats: st})
	many := append(append([]string(nil), terms...), "absent1", "absent2", "absent3", "absent4", "absent5", "absent6", "absent7", "absent8")
	got := BM25(many, cs, Options{Stats: st})
	scored := 0
	for i := range few {
		if few[i] != got[i] {
			t.Fatalf("candidate %d: %v with %d terms, %v with %d", i, few[i], len(terms), got[i], len(many))
		}
		if few[i] > 0 {
			scored++
		}
	}
	if scored == 0 {
		t.Fatal("no candidate holds a query term")
	}
}

// TestBM25Text: a candidate given as its index form (Text) scores as its fields (Terms) do, with
// the query terms found by their spaces in that form, and the text split otherwise (other white
// space, a term twice in the query, a query of many terms).
func TestBM25Text(t *testing.T) {
	texts := []string{"", "a", "ab cd", "ab ab ab", "x ab ab y", "xab abx ab", "abab ab", "ab", "cd ab", "视频 频创 ab", "频 视频 频",
		" lead ab", "ab trail ", "two  spaces ab", "tab\tsep ab", "ab\u3000ab", "a\u00a0b ab", "a\u2028b", "ab\u0085ab",
		"カタ カナ ab", "x\ry ab", "ab\ncd", "longer text of ab words, cd and ab again ab"}
	queries := [][]string{{"ab"}, {"ab", "cd"}, {"ab", "ab", "频"}, {"ab cd"}, {"频", "视频", "カナ", "ab"},
		{"q1", "q2", "q3", "q4", "q5", "q6", "q7", "q8", "ab", "cd"}}
	r := rand.New(rand.NewSource(2))
	for i := 0; i < 300; i++ { // random texts of a small vocabulary with every separator
		var b strings.Builder
		for j := r.Intn(40); j >= 0; j-- {
			b.WriteString([]string{"ab", "cd", "abcd", "a", "b", "频"}[r.Intn(6)])
			b.WriteString([]string{" ", " ", " ", " ", "  ", "\t", "\u3000", ""}[r.Intn(8)])
		}
		texts = append(texts, b.String())
	}
	st := Stats{Docs: 1000, AvgLen: 5, DF: func(string) int { return 10 }}
	for _, q := range queries {
		byText, byTerms := make([]Candidate, len(texts)), make([]Candidate, len(texts))
		for i, s := range texts {
			byText[i], byTerms[i] = Candidate{ID: s, Text: s}, Candidate{ID: s, Terms: strings.Fields(s)}
		}
		for _, opt := range []Options{{Stats: st}, {}} {
			got, want := BM25(q, byText, opt), BM25(q, byTerms, opt)
			for i := range texts {
				if got[i] != want[i] {
					t.Fatalf("query %q, text %q: %v from the text, %v from its fields", q, texts[i], got[i], want[i])
				}
			}
		}
	}
}

// TestBM25Counts: a candidate given as its term count and the query terms' frequencies (Len,
// Counts: what a store counts in its keyword index) scores as its fields (Terms) do, a term twice
// in the query and a query of many terms included.
func TestBM25Counts(t *testing.T) {
	queries := [][]string{{"ab"}, {"ab", "cd"}, {"ab", "ab", "频"}, {"频", "视频", "ab", "频"},
		{"q1", "q2", "q3", "q4", "q5", "q6", "q7", "q8", "ab", "cd", "ab"}}
	r := rand.New(rand.NewSource(3))
	var texts [][]string
	for i := 0; i < 300; i++ {
		var words []string
		for j := r.Intn(40); j >= 0; j-- {
			words = append(words, []string{"ab", "cd", "abcd", "a", "频", "视频", "q3"}[r.Intn(7)])
		}
		texts = append(texts, words)
	}
	texts = append(texts, nil)
	st := Stats{Docs: 1000, AvgLen: 5, DF: func(string) int { return 10 }}
	for _, q := range queries {
		byCounts, byTerms := make([]Candidate, len(texts)), make([]Candidate, len(texts))
		for i, words := range texts {
			counts := map[string]int{}
			for _, w := range words {
				if slices.Contains(q, w) {
					counts[w]++
				}
			}
			id := strconv.Itoa(i)
			byCounts[i], byTerms[i] = Candidate{ID: id, Len: len(words), Counts: counts}, Candidate{ID: id, Terms: words}
		}
		for _, opt := range []Options{{Stats: st}, {}} {
			got, want := BM25(q, byCounts, opt), BM25(q, byTerms, opt)
			for i := range texts {
				if got[i] != want[i] {
					t.Fatalf("query %q, text %q: %v from the counts, %v from its terms", q, texts[i], got[i], want[i])
				}
			}
		}
	}
}

// BenchmarkBM25Text is BenchmarkBM25 with the candidates as their index forms (Candidate.Text),
// as kb gives them.
func BenchmarkBM25Text(b *testing.B) {
	terms, cs := bm25Cands(300)
	for i := range cs {
		cs[i] = Candidate{ID: cs[i].ID, Text: strings.Join(cs[i].Terms, " ")}
	}
	st := Stats{Docs: 100_000, AvgLen: 150, DF: func(string) int { return 1000 }}
	b.ReportAllocs()
	for b.Loop() {
		BM25(terms, cs, Options{Stats: st})
	}
}

// BenchmarkBM25 scores 300 candidates for a 3-term query, what kb does twice a search (its
// keyword rows, then every candidate). Target: search p95 at 100k chunks (BENCHMARKS.md).
func BenchmarkBM25(b *testing.B) {
	terms, cs := bm25Cands(300)
	st := Stats{Docs: 100_000, AvgLen: 150, DF: func(string) int { return 1000 }}
	b.ReportAllocs()
	for b.Loop() {
		BM25(terms, cs, Options{Stats: st})
	}
}
