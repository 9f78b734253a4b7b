package chunk_test

import (
	"strings"
	"testing"

	"github.com/reelforge/reelforge/host/kb/chunk"
)

func TestWindowsNeverCutInsideANumber(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := range 60 {
		b.WriteString("Tofu block ")
		b.WriteString(strings.Repeat("x", i%7))
		b.WriteString(" costs 2.40 dollars at shop.example.com today. ")
	}
	for _, size := range []int{200, 237, 311} {
		for _, c := range chunk.Split(b.String(), chunk.Options{Size: size, Overlap: 40}) {
			text := strings.TrimSpace(c.Text)
			if strings.HasSuffix(text, "2.") || strings.HasSuffix(text, "shop.") || strings.HasSuffix(text, "example.") {
				t.Errorf("size %d: chunk %d ends inside a number or address: ...%q", size, c.Index, text[max(0, len(text)-30):])
			}
			if strings.HasPrefix(text, "40 ") || strings.HasPrefix(text, "com ") {
				t.Errorf("size %d: chunk %d starts inside a number or address: %q...", size, c.Index, text[:min(30, len(text))])
			}
		}
	}
}
