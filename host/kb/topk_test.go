package kb

import (
	"math/rand/v2"
	"sort"
	"testing"
)

func TestTopK(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for round := 0; round < 200; round++ {
		n, items := r.IntN(12), r.IntN(60)
		dots := make([]float32, items)
		for i := range dots {
			dots[i] = float32(r.IntN(8)) // many ties
		}
		top := newTopK(n)
		for i, d := range dots {
			top.push(i, d)
		}
		want := make([]int, items)
		for i := range want {
			want[i] = i
		}
		sort.SliceStable(want, func(a, b int) bool { return dots[want[a]] > dots[want[b]] })
		want = want[:min(n, items)]
		got := top.sorted()
		if len(got) != len(want) {
			t.Fatalf("round %d: %d items, want %d", round, len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("round %d: got %v, want %v (dots %v)", round, got, want, dots)
			}
		}
	}
}

func TestNearestParallelIsSequential(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const dims = 16
	vecs := make([][]float32, parallelScan+777)
	for i := range vecs {
		vecs[i] = make([]float32, dims)
		for k := range vecs[i] {
			vecs[i][k] = float32(r.IntN(3)) // coarse values: many equal dot products
		}
	}
	vecs[100] = nil // a vector of another dimension is skipped
	qv := make([]float32, dims)
	var nz []int32
	for k := range qv {
		if k%3 == 0 {
			qv[k] = 1
			nz = append(nz, int32(k))
		}
	}
	for _, n := range []int{1, 7, 100} {
		top := newTopK(n)
		scan(top, vecs, 0, qv, nz)
		want := top.sorted()
		got := nearest(vecs, qv, nz, n)
		if len(got) != len(want) {
			t.Fatalf("n=%d: %d items, want %d", n, len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("n=%d: got %v, want %v", n, got, want)
			}
		}
	}
}
