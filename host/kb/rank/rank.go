// Package rank is the in-memory hybrid scoring of SPEC.md rule 5: candidates are scored by a
// keyword leg (BM25 relative to the best candidate's, squared: 0..1) and a vector leg (cosine
// similarity clamped to 0..1),
// total = 0.7*vector + 0.3*keyword, sorted by total descending and cut to top_k. A relevance
// floor drops candidates that share no term with the query and whose vector score is below Floor,
// so a query of random letters returns no hits.
package rank

import (
	"math"
	"sort"
)

// The fusion weights, total = vector weight * vector score + keyword weight * keyword score: this
// is their one place. SPEC.md rule 5 (Score, in memory) and rule 4 (the pgvector statement, which
// host/kb hands them to as store.SearchParams.Weights) weigh the legs differently.
const (
	vectorWeight     = 0.7
	keywordWeight    = 0.3
	SQLVectorWeight  = 0.65
	SQLKeywordWeight = 0.35
)

// Floor is the default relevance floor on the vector score of a candidate with no keyword match.
// The local embedder gives texts that share no feature a cosine of 0 except through hash
// collisions, which for a one-word query against a short chunk reach about 0.3 (measured with
// random-letter queries in rank_test.go); a vector match without any shared term is noise.
const Floor = 0.4

// KeywordPower is the exponent of the relative keyword score, (s / max s)^KeywordPower. The
// keyword leg ranks better than the local embedder's vectors (BM25 alone beats vectors alone on
// both public sets), but s/max compresses its margins: a chunk at 90% of the best BM25 scores 0.9,
// and a cosine gap of 0.04 overturns that. Squaring keeps 0..1 and the keyword order and widens
// the margins near the top (0.81), so the vector leg mostly breaks near-ties. On every question of
// ../shared/bench, power 1 → 2: drcd hit@5 0.9921 → 0.9926, MRR@10 0.9613 → 0.9644; squad11
// 0.9119 → 0.9133, 0.8263 → 0.8284 (BENCHMARKS.md). pgstore's SQL squares the same way.
const KeywordPower = 2

// BM25 parameters: k1 0.9 and b 0.4 (the benchmark baseline's, good for short chunks).
const (
	DefaultK1 = 0.9
	DefaultB  = 0.4
)

// Candidate is one chunk to score. Terms are its segment.Terms (or its stored index form split on
// spaces); Vector its embedding (nil when it has none: vector score 0).
type Candidate struct {
	ID     string
	Terms  []string
	Vector []float32
}

// Query is the segmented and embedded query.
type Query struct {
	Terms  []string // segment.Query(text): distinct terms
	Vector []float32
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
	// SquashK > 0 scores keywords as s/(s+SquashK) (absolute); 0, the default, scores them as
	// (s/max(s))^Power over the candidates (relative), which measured better on the benchmark sets.
	SquashK float64
	Power   float64 // the relative score's exponent; 0 means KeywordPower (benchmarks try others)
	Stats   Stats
}

// Hit is one scored candidate.
type Hit struct {
	Index   int    // position in the candidate slice
	ID      string // the candidate's ID
	Vector  float64
	Keyword float64
	Total   float64
}

// Score ranks candidates for q and returns at most TopK hits, best first (ties by candidate
// order).
func Score(q Query, cands []Candidate, opt Options) []Hit {
	if opt.TopK <= 0 {
		opt.TopK = 5
	}
	if opt.Floor == 0 {
		opt.Floor = Floor
	}
	kw := Keyword(q.Terms, cands, opt)
	hits := make([]Hit, 0, len(cands))
	for i, c := range cands {
		v := Cosine(q.Vector, c.Vector)
		if kw[i] == 0 && v < opt.Floor {
			continue
		}
		hits = append(hits, Hit{Index: i, ID: c.ID, Vector: v, Keyword: kw[i],
			Total: vectorWeight*v + keywordWeight*kw[i]})
	}
	sort.SliceStable(hits, func(a, b int) bool { return hits[a].Total > hits[b].Total })
	if len(hits) > opt.TopK {
		hits = hits[:opt.TopK]
	}
	return hits
}

// Keyword returns the keyword score in 0..1 of every candidate: BM25 with opt's parameters and
// statistics, divided by the best candidate's and raised to KeywordPower (or squashed as
// s/(s+SquashK) when SquashK > 0).
func Keyword(terms []string, cands []Candidate, opt Options) []float64 {
	k1, b, sk, pow := opt.K1, opt.B, opt.SquashK, opt.Power
	if pow == 0 {
		pow = KeywordPower
	}
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
	qset := make(map[string]int, len(terms))
	for i, t := range terms {
		if _, ok := qset[t]; !ok {
			qset[t] = i
		}
	}
	tfs := make([][]float64, len(cands)) // per candidate, tf per query term index
	lens := make([]int, len(cands))
	localDF := make([]int, len(terms))
	total := 0
	for ci, c := range cands {
		lens[ci] = len(c.Terms)
		total += len(c.Terms)
		var tf []float64
		for _, t := range c.Terms {
			if qi, ok := qset[t]; ok {
				if tf == nil {
					tf = make([]float64, len(terms))
				}
				if tf[qi] == 0 {
					localDF[qi]++
				}
				tf[qi]++
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
		idf[qi] = IDF(n, df)
	}
	maxS := 0.0
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
		maxS = math.Max(maxS, s)
	}
	for ci, s := range out {
		if sk <= 0 {
			if maxS > 0 {
				out[ci] = math.Pow(s/maxS, pow)
			}
		} else {
			out[ci] = s / (s + sk)
		}
	}
	return out
}

// IDF is BM25's idf: ln(1 + (n - df + 0.5)/(df + 0.5)).
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
