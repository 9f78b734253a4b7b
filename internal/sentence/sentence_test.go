package sentence_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reelforge/reelforge/internal/sentence"
)

func TestSplit(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		in, ends string
		want     []string
	}{
		"english":       {"Hook first. Then three beats! Done?", sentence.Ends, []string{"Hook first.", "Then three beats!", "Done?"}},
		"chinese":       {"开头三秒很重要。字幕要清楚！", sentence.Ends, []string{"开头三秒很重要。", "字幕要清楚！"}},
		"lines":         {"one\n\ntwo", sentence.Ends, []string{"one", "two"}},
		"extra ends":    {"a; b", sentence.Ends + ";", []string{"a;", "b"}},
		"empty":         {"  \n ", sentence.Ends, nil},
		"decimal":       {"The kit costs 2.40 dollars. Ship it.", sentence.Ends, []string{"The kit costs 2.40 dollars.", "Ship it."}},
		"url":           {"See https://example.com/a.b?x=1 for more. Then go.", sentence.Ends, []string{"See https://example.com/a.b?x=1 for more.", "Then go."}},
		"abbreviation":  {"Ask Dr. Lee, e.g. by mail. He answers.", sentence.Ends, []string{"Ask Dr. Lee, e.g. by mail.", "He answers."}},
		"initial":       {"J. Smith wrote it. Read it.", sentence.Ends, []string{"J. Smith wrote it.", "Read it."}},
		"quote":         {`He said "go." Then left.`, sentence.Ends, []string{`He said "go."`, "Then left."}},
		"chinese price": {"价格是2.40元。很便宜！", sentence.Ends, []string{"价格是2.40元。", "很便宜！"}},
		"ellipsis":      {"Wait... really? Yes.", sentence.Ends, []string{"Wait...", "really?", "Yes."}},
		"emoji after":   {"为什么要学手冲咖啡？☕ 先说结论。Done! 🎉 Next.", sentence.Ends, []string{"为什么要学手冲咖啡？☕", "先说结论。", "Done! 🎉", "Next."}},
		"emoji glued":   {"Wow!🔥 Next one.", sentence.Ends, []string{"Wow!🔥", "Next one."}},
		"double end":    {"真的吗？！当然。", sentence.Ends, []string{"真的吗？！", "当然。"}},
		"emoji inside":  {"I love it 🔥. Next.", sentence.Ends, []string{"I love it 🔥.", "Next."}},
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
