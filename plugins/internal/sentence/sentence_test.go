package sentence_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reelforge/reelforge/plugins/internal/sentence"
)

func TestSplit(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		in, ends string
		want     []string
	}{
		"english":    {"Hook first. Then three beats! Done?", sentence.Ends, []string{"Hook first.", "Then three beats!", "Done?"}},
		"chinese":    {"开头三秒很重要。字幕要清楚！", sentence.Ends, []string{"开头三秒很重要。", "字幕要清楚！"}},
		"lines":      {"one\n\ntwo", sentence.Ends, []string{"one", "two"}},
		"extra ends": {"a; b", sentence.Ends + ";", []string{"a;", "b"}},
		"empty":      {"  \n ", sentence.Ends, nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, sentence.Split(tc.in, tc.ends)); diff != "" {
				t.Errorf("Split(%q) diff (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}
