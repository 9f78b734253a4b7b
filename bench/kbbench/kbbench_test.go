package kbbench

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestBench runs the retrieval benchmark when KB_BENCH_DIR points at ../shared/bench, e.g.
//
//	KB_BENCH_DIR=/work/shared/bench go test ./bench/kbbench -run TestBench -v
//
// KB_BENCH_MAXQ limits the questions per set. It fails when the hybrid falls below the
// reference BM25.
func TestBench(t *testing.T) {
	dir := os.Getenv("KB_BENCH_DIR")
	if dir == "" {
		t.Skip("KB_BENCH_DIR not set")
	}
	sets, err := Sets(dir)
	if err != nil || len(sets) == 0 {
		t.Fatalf("no sets under %s: %v", dir, err)
	}
	maxQ, _ := strconv.Atoi(os.Getenv("KB_BENCH_MAXQ"))
	for _, s := range sets {
		if only := os.Getenv("KB_SET"); only != "" && !strings.HasSuffix(s, only) {
			continue
		}
		o := Options{MaxQuestions: maxQ}
		o.Rank.Power = envf("KB_KWPOW")
		o.Tuning.Bigram = envf("KB_BIGRAM")
		o.Tuning.Common = envf("KB_COMMON")
		o.Tuning.CJKUni = envf("KB_CJKUNI")
		o.KeywordCands = int(envf("KB_NK"))
		o.VectorCands = int(envf("KB_NV"))
		r, err := Run(s, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Log(r)
		if r.Hybrid.Hit5 < r.BM25.Hit5 || r.Hybrid.MRR10 < r.BM25.MRR10 {
			t.Errorf("%s: hybrid below BM25", r.Set)
		}
	}
}

func envf(k string) float64 {
	f, _ := strconv.ParseFloat(os.Getenv(k), 64)
	return f
}
