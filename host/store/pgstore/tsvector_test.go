package pgstore

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/reelforge/reelforge/host/store/storetest"
)

// BenchmarkSearchVector builds the keyword index value of a synthetic chunk of about 900
// characters of words drawn at random from a small vocabulary, once per iteration.
func BenchmarkSearchVector(b *testing.B) {
	words := strings.Fields("hook opening shot reel ending close-up lighting budget microphones night launch memo " +
		"quarterly plan draft scene cut retention audience creator platform conversion script voice")
	r := rand.New(rand.NewPCG(1, 2))
	var text strings.Builder
	for text.Len() < 900 {
		text.WriteString(words[r.IntN(len(words))])
		text.WriteByte(' ')
	}
	st := storetest.SearchText(text.String())
	b.SetBytes(int64(text.Len()))
	b.ReportAllocs()
	for b.Loop() {
		searchVector(st)
	}
}
