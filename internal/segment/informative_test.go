package segment_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reelforge/reelforge/internal/segment"
)

func TestInformative(t *testing.T) {
	t.Parallel()
	tests := map[string][]string{
		"What is the capital of France?": {"capital", "france"},
		"How much does OatBloom pay?":    {"oatbloom", "pay"},
		"What is it?":                    nil,
		"法国的首都是哪里？":                      {"法国", "首都"},
		"这是什么？":                          nil,
		"Clipsmith 创作者版年付价格是多少？":         {"clipsmith", "创作", "作者", "者版", "版年", "年付", "付价", "价格"},
		"猫":                    {"猫"},
		"Q":                    nil,
		"Is plan B ready?":     {"plan", "ready"},
		"Budget of episode 3?": {"budget", "episode", "3"},
	}
	for in, want := range tests {
		if diff := cmp.Diff(want, segment.Informative(in)); diff != "" {
			t.Errorf("Informative(%q) (-want +got):\n%s", in, diff)
		}
	}
}
