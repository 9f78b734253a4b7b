// Package rank is the one ranking of the knowledge base's search, on every path (SQLite,
// PostgreSQL with pgvector, PostgreSQL without): the stores only return candidates, their terms,
// their cosine with the query and the corpus statistics; the keyword score (BM25) and the fusion
// of the two legs happen here.
//
// Each candidate has a keyword score, BM25 with the whole corpus's statistics, reported relative
// to the best candidate's and squared (0..1), and a vector score, its cosine with the query
// clamped to 0..1. How the two are fused depends on whether the embedder carries semantic signal:
//
//   - A semantic embedder (a real embedding model): total = VectorWeight*vector +
//     KeywordWeight*keyword (SPEC.md rule 5), sorted by total. The vector leg may reorder the
//     keyword leg's hits: that is what it is for.
//   - A non-semantic embedder (the local hashing embedder, a bag of hashed words): its cosine is a
//     noisier copy of the keyword signal, and letting it reorder BM25's hits ranks answers below
//     plain BM25 on some questions. So the keyword leg's hits keep BM25's order exactly (ties by
//     chunk id), and the vector leg only adds, after them, the candidates BM25 did not find (no
//     query term) whose cosine reaches the floor. For every question, the rank of any chunk BM25
//     returns is the rank BM25 gives it: the hybrid cannot rank an answer below BM25, whatever the
//     language or domain. Totals stay VectorWeight*vector + KeywordWeight*keyword and sorted: a
//     hit's reported vector score is its cosine, capped so its total does not exceed the total of
//     the hit before it (see Score).
//
// A relevance floor drops candidates that share no term with the query and whose cosine is below
// Floor, so a query of random letters returns no hits.
package rank

import (
	"encoding/binary"
	"math"
	"sort"
	"strings"
)

// The fusion weights, total = VectorWeight * vector score + KeywordWeight * keyword score: their
// one place, for every path (SPEC.md rule 5's weights).
const (
	VectorWeight  = 0.7
	KeywordWeight = 0.3
)

// Floor is the default relevance floor on the vector score of a candidate with no keyword match.
// The local embedder gives texts that share no feature a cosine of 0 except through hash
// collisions, which for a one-word query against a short chunk reach about 0.3 (measured with
// random-letter queries in rank_test.go); a vector match without any shared term is noise.
const Floor = 0.4

// KeywordPower is the exponent of the reported relative keyword score, (s / max s)^KeywordPower.
// It keeps 0..1 and the keyword order and widens the margins near the top (0.9 → 0.81), so in
// the semantic fusion the vector leg mostly breaks near-ties; in the non-semantic order it only
// shapes the reported score.
const KeywordPower = 2

// BM25 parameters: k1 0.9 and b 0.4 (the benchmark baseline's, good for short chunks).
const (
	DefaultK1 = 0.9
	DefaultB  = 0.4
)

// Candidate is one chunk to score. Terms are its segment.Terms, or, when Terms is nil, Text is
// its stored index form (segment.IndexForm: the terms joined by single spaces), which BM25 reads
// without splitting it (see countText), or, when Counts is not nil, a store counted them: Len is
// the number of terms of the index form and Counts the frequency in it of each query term it
// holds (what BM25 reads of a text, without the text). Cosine is its embedding's cosine with the
// query's, in 0..1 (0 when either has none), computed by whoever holds the vectors: the store's
// vector index or the host's memory.
type Candidate struct {
	ID     string
	Terms  []string
	Text   string
	Len    int
	Counts map[string]int
	Cosine float64
}

// Stats are corpus statistics for BM25. Zero Stats means: compute them over the candidate set.
type Stats struct {
	Docs   int                   // chunks in the corpus
	AvgLen float64               // mean terms per chunk
	DF     func(term string) int // chunks holding term
}

// Options tune Score. Zero values take the defaults.
type Options struct {
	TopK  int     // 0 means 5
	Floor float64 // 0 means Floor; negative disables the floor
	K1, B float64 // BM25; 0 means the defaults
	Power float64 // the reported keyword score's exponent; 0 means KeywordPower
	Stats Stats
	// Semantic says the embedder carries semantic signal: the legs are fused by their weighted
	// sum. Otherwise the keyword leg's order is kept and the vector leg only adds candidates.
	Semantic bool
}

// Hit is one scored candidate.
type Hit struct {
	Index   int    // position in the candidate slice
	ID      string // the candidate's ID
	Vector  float64
	Keyword float64
	Total   float64
}

// Score ranks candidates for the query terms and returns at most TopK hits, best first. Ties go
// to the lower ID, so the order does not depend on the order the candidates came in (each path
// gathers them its own way).
func Score(terms []string, cands []Candidate, opt Options) []Hit {
	if opt.TopK <= 0 {
		opt.TopK = 5
	}
	if opt.Floor == 0 {
		opt.Floor = Floor
	}
	pow := opt.Power
	if pow == 0 {
		pow = KeywordPower
	}
	bm := BM25(terms, cands, opt)
	best := 0.0
	for _, s := range bm {
		best = math.Max(best, s)
	}
	hits := make([]Hit, 0, len(cands))
	for i, c := range cands {
		if bm[i] == 0 && c.Cosine < opt.Floor {
			continue
		}
		k := 0.0
		if bm[i] > 0 {
			k = math.Pow(bm[i]/best, pow)
		}
		hits = append(hits, Hit{Index: i, ID: c.ID, Vector: c.Cosine, Keyword: k,
			Total: VectorWeight*c.Cosine + KeywordWeight*k})
	}
	if opt.Semantic {
		sort.SliceStable(hits, func(a, b int) bool {
			if hits[a].Total != hits[b].Total {
				return hits[a].Total > hits[b].Total
			}
			return hits[a].ID < hits[b].ID
		})
	} else {
		// BM25's order for the chunks BM25 finds, then the vector leg's additions by cosine.
		sort.SliceStable(hits, func(a, b int) bool {
			x, y := bm[hits[a].Index], bm[hits[b].Index]
			if x != y {
				return x > y
			}
			if x == 0 && hits[a].Vector != hits[b].Vector {
				return hits[a].Vector > hits[b].Vector
			}
			return hits[a].ID < hits[b].ID
		})
		capTotals(hits)
	}
	if len(hits) > opt.TopK {
		hits = hits[:opt.TopK]
	}
	return hits
}

// capTotals reports the totals of hits in the non-semantic order under the same formula: a hit's
// vector score counts up to where its total reaches the previous hit's. The keyword scores fall
// along the order, so the cap is never below 0. A hit's scores depend on those before it alone.
func capTotals(hits []Hit) {
	prev := math.Inf(1)
	for i := range hits {
		h := &hits[i]
		if h.Total > prev {
			h.Vector = math.Max(0, (prev-KeywordWeight*h.Keyword)/VectorWeight)
			h.Total = math.Min(prev, VectorWeight*h.Vector+KeywordWeight*h.Keyword)
		}
		prev = h.Total
	}
}

// Rescore sets the scores of hits, Score's result for cands without Options.Semantic, from the
// cosines cands hold now, as Score would have reported them: for a caller that learns the cosines
// of some hits after ranking. Only those of candidates holding a query term (BM25 above 0) may
// have changed: their cosine neither admits such a candidate (the floor) nor places it, so the
// hits and their order are Score's with the new cosines too; and a hit's scores depend on its
// own and the hits' before it alone, so the hits past TopK that Score dropped do not matter (nor,
// for the hits left, those a caller leaves out of hits).
func Rescore(hits []Hit, cands []Candidate) {
	for i := range hits {
		h := &hits[i]
		h.Vector = cands[h.Index].Cosine
		h.Total = VectorWeight*h.Vector + KeywordWeight*h.Keyword
	}
	capTotals(hits)
}

// BM25 returns the BM25 score of every candidate for terms (0 for one holding no query term),
// with opt's parameters and statistics; without statistics, those of the candidate set.
func BM25(terms []string, cands []Candidate, opt Options) []float64 {
	k1, b := opt.K1, opt.B
	if k1 == 0 {
		k1 = DefaultK1
	}
	if b == 0 {
		b = DefaultB
	}
	out := make([]float64, len(cands))
	if len(terms) == 0 || len(cands) == 0 {
		return out
	}
	qset := newTermIndex(terms)
	tfs := make([][]float64, len(cands)) // per candidate, tf per query term index
	lens := make([]int, len(cands))
	localDF := make([]int, len(terms))
	total := 0
	for ci, c := range cands {
		var tf []float64
		if c.Counts != nil {
			lens[ci], tf = c.Len, qset.known(terms, c.Counts)
		} else if c.Terms == nil && c.Text != "" {
			lens[ci], tf = qset.countText(c.Text, len(terms))
		} else {
			lens[ci], tf = qset.count(c.Terms, len(terms))
		}
		total += lens[ci]
		for qi, f := range tf {
			if f > 0 {
				localDF[qi]++
			}
		}
		tfs[ci] = tf
	}
	n, avg := float64(len(cands)), float64(total)/float64(len(cands))
	if opt.Stats.Docs > 0 {
		n = float64(opt.Stats.Docs)
		if opt.Stats.AvgLen > 0 {
			avg = opt.Stats.AvgLen
		}
	}
	if avg <= 0 {
		avg = 1
	}
	idf := make([]float64, len(terms))
	for qi, t := range terms {
		df := float64(localDF[qi])
		if opt.Stats.DF != nil {
			df = math.Max(df, float64(opt.Stats.DF(t)))
		}
		n := math.Max(n, df)
		idf[qi] = IDF(n, df)
	}
	for ci, tf := range tfs {
		if tf == nil {
			continue
		}
		norm := k1 * (1 - b + b*float64(lens[ci])/avg)
		var s float64
		for qi, f := range tf {
			if f > 0 {
				s += idf[qi] * f * (k1 + 1) / (f + norm)
			}
		}
		out[ci] = s
	}
	return out
}

// termIndex finds a query term's index (its first place in the query) for BM25, which looks up
// every term of every candidate: a search at 100k chunks scores a few hundred candidates of about
// 150 terms, twice, and BM25 was half of the host's CPU a search there (a profile of the bench).
// A query of a few terms (most are) is scanned, after a test of the term's length against theirs
// that most candidate terms fail, where a map hashed every candidate term first: a third fewer
// instructions a BM25 call (BenchmarkBM25 under callgrind, 8.4 to 5.4 million; the target: search
// p95 at 100k chunks, BENCHMARKS.md). A longer query (a Chinese question is many unigrams and
// bigrams) goes through a map.
type termIndex struct {
	few  []string // distinct terms, when few
	pad  []string // each of few with a space on each side, for countText
	at   []int    // their indexes in the query
	lens uint64   // bit n set: a term of few is n bytes long (n < 64); most candidate terms stop here
	many map[string]int
}

// termScanMax is the most distinct terms termIndex scans.
const termScanMax = 8

func newTermIndex(terms []string) termIndex {
	var x termIndex
	for i, t := range terms {
		if _, ok := x.find(t); ok {
			continue
		}
		if x.many == nil && len(x.few) < termScanMax {
			x.few, x.pad, x.at = append(x.few, t), append(x.pad, " "+t+" "), append(x.at, i)
			x.lens |= 1 << min(len(t), 63) // 63: any length from 63 on
			continue
		}
		if x.many == nil {
			x.many = make(map[string]int, len(terms))
			for k, f := range x.few {
				x.many[f] = x.at[k]
			}
		}
		x.many[t] = i
	}
	return x
}

// count returns the number of terms and the frequency of each query term (by its index in the
// query, n terms; nil when none is there) in terms.
func (x *termIndex) count(terms []string, n int) (int, []float64) {
	var tf []float64
	for _, t := range terms {
		if qi, ok := x.find(t); ok {
			if tf == nil {
				tf = make([]float64, n)
			}
			tf[qi]++
		}
	}
	return len(terms), tf
}

// known is what count returns of a text whose query term frequencies a store counted: counts,
// term → frequency, placed at each term's first index in the query as count places them (nil when
// the text holds none of terms).
func (x *termIndex) known(terms []string, counts map[string]int) []float64 {
	var tf []float64
	for i, t := range terms {
		f := counts[t]
		if f <= 0 {
			continue
		}
		if at, _ := x.find(t); at != i {
			continue // a repeated query term: counted at its first index
		}
		if tf == nil {
			tf = make([]float64, len(terms))
		}
		tf[i] = float64(f)
	}
	return tf
}

// countText is count of the terms of an index form, text (its fields, strings.Fields). A search
// at 100k chunks scores about 300 candidates of about 200 terms, twice: splitting each text and
// looking every term up was two thirds of the host's CPU a search (a profile of the bench; the
// target: search p95 at 100k chunks, BENCHMARKS.md). When text is in the form segment.IndexForm
// writes (non-empty terms joined by single spaces, no other white space) and the query has few
// distinct terms, the spaces are counted and each query term is searched for with a space on
// each side (strings.Index, a vector search), and at the text's ends: the terms the split gives,
// without it. Otherwise text is split.
func (x *termIndex) countText(text string, n int) (int, []float64) {
	if x.many != nil || !indexForm(text) {
		return x.count(strings.Fields(text), n)
	}
	var tf []float64
	for k, f := range x.few {
		c := 0
		if f != "" && strings.IndexByte(f, ' ') < 0 { // else not a term: never between spaces
			pad := x.pad[k] // " " + f + " "
			for i := 0; ; {
				j := strings.Index(text[i:], pad)
				if j < 0 {
					break
				}
				c++
				i += j + len(pad) - 1 // the space after it may begin the next one
			}
			if len(text) > len(f) {
				if text[len(f)] == ' ' && text[:len(f)] == f {
					c++
				}
				if text[len(text)-len(f)-1] == ' ' && text[len(text)-len(f):] == f {
					c++
				}
			} else if text == f {
				c++
			}
		}
		if c > 0 {
			if tf == nil {
				tf = make([]float64, n)
			}
			tf[x.at[k]] += float64(c)
		}
	}
	return strings.Count(text, " ") + 1, tf
}

// indexForm reports whether text is non-empty terms joined by single spaces with no other white
// space, the form whose terms countText finds by its spaces. Eight bytes at a time, a word holds
// none of the bytes it refuses when it has no byte below 0x20 (ASCII control characters, among
// them every ASCII white space but the space) and none of the lead bytes of the non-ASCII white
// space runes (0xC2, 0xE1, 0xE2, 0xE3: U+0085, U+00A0, U+1680, U+2000 to U+205F, U+3000; other
// runes share them, and take the split).
func indexForm(text string) bool {
	if text == "" || text[0] == ' ' || text[len(text)-1] == ' ' || strings.Contains(text, "  ") {
		return false
	}
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	zero := func(v uint64) uint64 { return (v - lo) &^ v & hi } // non-zero when a byte of v is 0
	i := 0
	for ; i+8 <= len(text); i += 8 {
		w := binary.LittleEndian.Uint64([]byte(text[i : i+8]))
		if (w-0x20*lo)&^w&hi|zero(w^0xC2*lo)|zero(w^0xE1*lo)|zero(w^0xE2*lo)|zero(w^0xE3*lo) != 0 {
			return false
		}
	}
	for ; i < len(text); i++ {
		switch text[i] {
		case 0xC2, 0xE1, 0xE2, 0xE3:
			return false
		}
		if text[i] < 0x20 {
			return false
		}
	}
	return true
}

func (x *termIndex) find(t string) (int, bool) {
	if x.many != nil {
		i, ok := x.many[t]
		return i, ok
	}
	if x.lens&(1<<min(len(t), 63)) == 0 {
		return 0, false
	}
	for k, f := range x.few {
		if f == t {
			return x.at[k], true
		}
	}
	return 0, false
}

// IDF is BM25's idf: ln(1 + (n - df + 0.5)/(df + 0.5)), above 0 for every df ≤ n.
func IDF(n, df float64) float64 { return math.Log(1 + (n-df+0.5)/(df+0.5)) }

// Cosine returns the cosine similarity of a and b clamped to 0..1 (0 when either is empty or
// zero, or the lengths differ).
func Cosine(a, b []float32) float64 {
	if len(a) == 0 || len(a) != len(b) {
		return 0
	}
	var dot, na, nb float32
	for i := range a {
		dot += a[i] * b[i]
		na += a[i] * a[i]
		nb += b[i] * b[i]
	}
	if na == 0 || nb == 0 || dot <= 0 {
		return 0
	}
	c := float64(dot) / math.Sqrt(float64(na)*float64(nb))
	return math.Min(1, c)
}
