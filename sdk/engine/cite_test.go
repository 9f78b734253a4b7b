package engine_test

import (
	"testing"

	"github.com/reelforge/reelforge/sdk/engine"
)

func TestNormalizeCitations(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"Twelve hours [1].":             "Twelve hours [#1].",
		"Twelve hours (#2) and [ 1 ]":   "Twelve hours [#2] and [#1]",
		"十二小时【1】。":                      "十二小时[#1]。",
		"Already [#1].":                 "Already [#1].",
		"Out of range [7], year (2024)": "Out of range [7], year (2024)",
	}
	for in, want := range tests {
		if got := engine.NormalizeCitations(in, 3); got != want {
			t.Errorf("NormalizeCitations(%q) = %q, want %q", in, got, want)
		}
	}
}
