package zhwords_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reelforge/reelforge/internal/zhwords"
)

// TestWords: the script's and the sentences are cut as jieba cuts them (without its HMM).
func TestWords(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"流程一旦固定下来几乎不用多想":  "流程 一旦 固定 下来 几乎 不用 多 想",
		"三个理由让你爱上手冲咖啡":    "三个 理由 让 你 爱 上 手 冲 咖啡",
		"为什么手冲咖啡比速溶咖啡更好喝": "为什么 手 冲 咖啡 比 速溶 咖啡 更好 喝",
		"宇航员在失重的太空里怎么睡觉":  "宇航员 在 失重 的 太空 里 怎么 睡觉",
	}
	for in, want := range tests {
		t.Run(in, func(t *testing.T) {
			t.Parallel()
			if got := strings.Join(zhwords.Words(in), " "); got != want {
				t.Errorf("Words(%q) = %q, want %q", in, got, want)
			}
		})
	}
}

// TestInside: the offsets inside a word are marked, those between words, around Latin text and
// punctuation are not.
func TestInside(t *testing.T) {
	t.Parallel()
	text := "流程一旦固定，AI咖啡"
	var got []string
	for i := range text {
		if zhwords.Inside(text)[i] {
			got = append(got, text[:i]+"|")
		}
	}
	want := []string{"流|", "流程一|", "流程一旦固|", "流程一旦固定，AI咖|"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Inside(%q) (-want +got):\n%s", text, diff)
	}
}
