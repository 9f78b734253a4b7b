package pgstore

import (
	"math/rand/v2"
	"testing"

	"github.com/reelforge/reelforge/host/kb/kbbench"
	"github.com/reelforge/reelforge/host/kb/segment"
)

// BenchmarkSearchVector builds the keyword index value of a synthetic chunk of about 900
// characters (the knowledge bench's text), once per iteration.
func BenchmarkSearchVector(b *testing.B) {
	text := kbbench.NewVocab(rand.New(rand.NewPCG(1, 2))).Text(1)
	st := segment.IndexForm(text)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		searchVector(st)
	}
}
