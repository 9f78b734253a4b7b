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

func TestRefused(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]bool{
		"I'm sorry, but I can't help with that.":                                      true,
		"抱歉，我无法完成这个请求。":                                                               true,
		"Sorry to keep you waiting! Here is the script: hook, beats, call to action.": false,
		"Press the tofu for ten minutes.":                                             false,
	} {
		if got := engine.Refused(text); got != want {
			t.Errorf("Refused(%q) = %v, want %v", text, got, want)
		}
	}
}
