// Package kbbench measures retrieval on the public benchmark sets of ../shared/bench (see its
// README): every document is chunked (1000/180) as its own document, embedded with the local
// embedder, and each question is answered by (a) the hybrid ranking of package rank over the
// candidate rule of DESIGN.md (keyword top-N plus vector top-N, the whole set's BM25 statistics,
// as kb.Service ranks them) and (b) the reference BM25-only ranking of the set's README
// over the same chunks (words for Latin, character unigrams and bigrams for Chinese; k1 0.9,
// b 0.4), both reported as strict hit@5 and MRR@10.
//
// The data is read at run time and never copied into the repository.
package kbbench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/reelforge/reelforge/host/kb/chunk"
	"github.com/reelforge/reelforge/host/kb/embed"
	"github.com/reelforge/reelforge/host/kb/rank"
	"github.com/reelforge/reelforge/internal/segment"
)

// Options of a run. Zero values take the defaults.
type Options struct {
	Chunk        chunk.Options // 1000/180
	KeywordCands int           // keyword leg candidates, 0 means 100
	VectorCands  int           // vector leg candidates, 0 means 100
	MaxQuestions int           // 0 means all
	Workers      int           // 0 means GOMAXPROCS
	Rank         rank.Options  // TopK is forced to 10, Stats to the set's
	Tuning       embed.Tuning  // zero: the local embedder's defaults
}

// Metrics are strict hit@5 and MRR@10 over the questions.
type Metrics struct {
	Hit5  float64 `json:"hit5"`
	MRR10 float64 `json:"mrr10"`
}

// Result is the outcome for one set.
type Result struct {
	Set          string  `json:"set"`
	Docs         int     `json:"docs"`
	Chunks       int     `json:"chunks"`
	Questions    int     `json:"questions"`
	Hybrid       Metrics `json:"hybrid"`
	BM25         Metrics `json:"bm25"`
	Worse        int     `json:"hybrid_worse_than_bm25"` // questions whose answer the hybrid ranks below the reference BM25
	EmbedPerSec  float64 `json:"embed_chunks_per_s"`
	EmbedMBPerS  float64 `json:"embed_mb_per_s"`
	QueryMeanMS  float64 `json:"hybrid_query_mean_ms"`
	QueryP95MS   float64 `json:"hybrid_query_p95_ms"`
	NoHitQueries int     `json:"hybrid_empty_queries"`
}

func (r Result) String() string {
	return fmt.Sprintf("%-8s chunks %5d questions %5d | hybrid hit@5 %.4f MRR@10 %.4f | bm25 hit@5 %.4f MRR@10 %.4f | worse %d | embed %.0f chunks/s (%.1f MB/s) | query mean %.2f ms p95 %.2f ms",
		r.Set, r.Chunks, r.Questions, r.Hybrid.Hit5, r.Hybrid.MRR10, r.BM25.Hit5, r.BM25.MRR10, r.Worse,
		r.EmbedPerSec, r.EmbedMBPerS, r.QueryMeanMS, r.QueryP95MS)
}

type doc struct {
	ID, Title, Text string
}

type question struct {
	ID          string   `json:"id"`
	Question    string   `json:"question"`
	AnswerTexts []string `json:"answer_texts"`
	GoldDocID   string   `json:"gold_doc_id"`
}

type unit struct {
	doc  string
	text string
}

// ReadJSONL reads a file of one JSON value a line (docs.jsonl, questions.jsonl of a set); an error
// names the file.
func ReadJSONL[T any](path string) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, v)
	}
	return out, sc.Err()
}

// Sets returns the benchmark set folders under dir (those holding docs.jsonl), sorted.
func Sets(dir string) ([]string, error) {
	m, err := filepath.Glob(filepath.Join(dir, "*", "docs.jsonl"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range m {
		out = append(out, filepath.Dir(p))
	}
	sort.Strings(out)
	return out, nil
}

// Run measures one set folder (holding docs.jsonl and questions.jsonl).
func Run(setDir string, opt Options) (Result, error) {
	if opt.Chunk.Size == 0 {
		opt.Chunk = chunk.Default()
	}
	if opt.KeywordCands == 0 {
		opt.KeywordCands = 100
	}
	if opt.VectorCands == 0 {
		opt.VectorCands = 100
	}
	if opt.Workers == 0 {
		opt.Workers = runtime.GOMAXPROCS(0)
	}
	opt.Rank.TopK = 10
	docs, err := ReadJSONL[doc](filepath.Join(setDir, "docs.jsonl"))
	if err != nil {
		return Result{}, err
	}
	qs, err := ReadJSONL[question](filepath.Join(setDir, "questions.jsonl"))
	if err != nil {
		return Result{}, err
	}
	if opt.MaxQuestions > 0 && len(qs) > opt.MaxQuestions {
		qs = qs[:opt.MaxQuestions]
	}
	res := Result{Set: filepath.Base(setDir), Docs: len(docs), Questions: len(qs)}

	var units []unit
	for _, d := range docs {
		for _, c := range chunk.Split(d.Text, opt.Chunk) {
			units = append(units, unit{doc: d.ID, text: c.Text})
		}
	}
	res.Chunks = len(units)

	// Embed (one core, as ingest would) and segment.
	local := embed.NewLocal()
	if opt.Tuning != (embed.Tuning{}) {
		local = embed.NewLocalTuned(opt.Tuning)
	}
	texts := make([]string, len(units))
	bytes := 0
	for i, u := range units {
		texts[i] = u.text
		bytes += len(u.text)
	}
	t0 := time.Now()
	vecs, _ := local.Embed(context.Background(), texts)
	terms := make([][]string, len(units))
	for i, u := range units {
		terms[i] = segment.Terms(u.text)
	}
	el := time.Since(t0).Seconds()
	res.EmbedPerSec = float64(len(units)) / el
	res.EmbedMBPerS = float64(bytes) / el / 1e6

	kwIndex := newIndex(terms, opt.Rank.K1, opt.Rank.B)
	baseTerms := make([][]string, len(units))
	for i, u := range units {
		baseTerms[i] = baselineTokens(u.text)
	}
	baseIndex := newIndex(baseTerms, rank.DefaultK1, rank.DefaultB)
	stats := rank.Stats{Docs: len(units), AvgLen: kwIndex.avg, DF: kwIndex.df}

	type outcome struct {
		hybrid, base int // rank of first strict hit, 0 when none in top 10
		ms           float64
		empty        bool
	}
	outs := make([]outcome, len(qs))
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < opt.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for qi := range next {
				q := qs[qi]
				start := time.Now()
				qt := segment.Query(q.Question)
				qv := local.Vector(q.Question)
				cand := map[int]bool{}
				for _, s := range kwIndex.top(qt, opt.KeywordCands) {
					cand[s.id] = true
				}
				for _, id := range vectorTop(qv, vecs, opt.VectorCands) {
					cand[id] = true
				}
				ids := make([]int, 0, len(cand))
				for id := range cand {
					ids = append(ids, id)
				}
				sort.Ints(ids)
				cs := make([]rank.Candidate, len(ids))
				for i, id := range ids {
					cs[i] = rank.Candidate{ID: fmt.Sprintf("%09d", id), Terms: terms[id], Cosine: rank.Cosine(qv, vecs[id])}
				}
				ro := opt.Rank
				ro.Stats = stats
				hits := rank.Score(qt, cs, ro)
				ms := float64(time.Since(start).Microseconds()) / 1000
				hy := make([]int, len(hits))
				for i, h := range hits {
					hy[i] = ids[h.Index]
				}
				var bt []int
				for _, s := range baseIndex.top(segment.Distinct(baselineTokens(q.Question)), 10) {
					bt = append(bt, s.id)
				}
				outs[qi] = outcome{firstHit(hy, q, units), firstHit(bt, q, units), ms, len(hits) == 0}
			}
		}()
	}
	for i := range qs {
		next <- i
	}
	close(next)
	wg.Wait()

	lat := make([]float64, len(outs))
	for i, o := range outs {
		add := func(m *Metrics, r int) {
			if r > 0 && r <= 5 {
				m.Hit5++
			}
			if r > 0 {
				m.MRR10 += 1 / float64(r)
			}
		}
		add(&res.Hybrid, o.hybrid)
		add(&res.BM25, o.base)
		if o.base > 0 && (o.hybrid == 0 || o.hybrid > o.base) {
			res.Worse++
		}
		lat[i] = o.ms
		res.QueryMeanMS += o.ms
		if o.empty {
			res.NoHitQueries++
		}
	}
	n := float64(len(qs))
	res.Hybrid.Hit5 /= n
	res.Hybrid.MRR10 /= n
	res.BM25.Hit5 /= n
	res.BM25.MRR10 /= n
	res.QueryMeanMS /= n
	sort.Float64s(lat)
	if len(lat) > 0 {
		res.QueryP95MS = lat[int(0.95*float64(len(lat)-1))]
	}
	return res, nil
}

func firstHit(ranked []int, q question, units []unit) int {
	for i, id := range ranked {
		if i >= 10 {
			break
		}
		u := units[id]
		if u.doc != q.GoldDocID {
			continue
		}
		for _, a := range q.AnswerTexts {
			if a != "" && strings.Contains(u.text, a) {
				return i + 1
			}
		}
	}
	return 0
}

var (
	baseWord = regexp.MustCompile(`[a-z0-9]+`)
	baseCJK  = regexp.MustCompile(`[\x{3400}-\x{9fff}\x{f900}-\x{faff}]+`)
)

// baselineTokens are the reference baseline's tokens: lower-case [a-z0-9]+ words minus the stop
// words, and CJK character unigrams plus bigrams.
func baselineTokens(text string) []string {
	text = strings.ToLower(text)
	var out []string
	for _, w := range baseWord.FindAllString(text, -1) {
		if !segment.IsStopWord(w) {
			out = append(out, w)
		}
	}
	for _, run := range baseCJK.FindAllString(text, -1) {
		rs := []rune(run)
		for _, r := range rs {
			out = append(out, string(r))
		}
		for i := 0; i+1 < len(rs); i++ {
			out = append(out, string(rs[i:i+2]))
		}
	}
	return out
}

// index is an in-memory inverted index with BM25, standing in for the store's keyword leg.
type index struct {
	post   map[string][]posting
	lens   []float64
	avg    float64
	k1, b  float64
	nUnits int
}

type posting struct {
	id int
	tf float64
}

type scored struct {
	id    int
	score float64
}

func newIndex(terms [][]string, k1, b float64) *index {
	if k1 == 0 {
		k1 = rank.DefaultK1
	}
	if b == 0 {
		b = rank.DefaultB
	}
	ix := &index{post: map[string][]posting{}, lens: make([]float64, len(terms)), k1: k1, b: b, nUnits: len(terms)}
	total := 0.0
	for id, ts := range terms {
		tf := map[string]float64{}
		for _, t := range ts {
			tf[t]++
		}
		for t, c := range tf {
			ix.post[t] = append(ix.post[t], posting{id, c})
		}
		ix.lens[id] = float64(len(ts))
		total += float64(len(ts))
	}
	ix.avg = total / float64(max(1, len(terms)))
	return ix
}

func (ix *index) df(t string) int { return len(ix.post[t]) }

func (ix *index) top(qterms []string, n int) []scored {
	acc := map[int]float64{}
	for _, t := range qterms {
		p := ix.post[t]
		if len(p) == 0 {
			continue
		}
		idf := rank.IDF(float64(ix.nUnits), float64(len(p)))
		for _, x := range p {
			norm := ix.k1 * (1 - ix.b + ix.b*ix.lens[x.id]/ix.avg)
			acc[x.id] += idf * x.tf * (ix.k1 + 1) / (x.tf + norm)
		}
	}
	out := make([]scored, 0, len(acc))
	for id, s := range acc {
		out = append(out, scored{id, s})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].score != out[j].score {
			return out[i].score > out[j].score
		}
		return out[i].id < out[j].id
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

func vectorTop(q []float32, vecs [][]float32, n int) []int {
	out := make([]scored, 0, n+1)
	for id, v := range vecs {
		var dot float32
		for i := range q {
			dot += q[i] * v[i]
		}
		s := float64(dot)
		if len(out) == n && s <= out[n-1].score {
			continue
		}
		k := sort.Search(len(out), func(i int) bool { return out[i].score < s })
		out = append(out, scored{})
		copy(out[k+1:], out[k:])
		out[k] = scored{id, s}
		if len(out) > n {
			out = out[:n]
		}
	}
	ids := make([]int, len(out))
	for i, s := range out {
		ids[i] = s.id
	}
	return ids
}
