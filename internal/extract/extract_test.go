package extract_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reelforge/reelforge/internal/extract"
)

func TestBest(t *testing.T) {
	t.Parallel()
	passages := []string{
		"Press extra-firm tofu for ten minutes before frying. A block costs 2.40 dollars.",
		"Our brand colour is teal. What matters is the logo.",
		"豆腐要先压干水分。每块豆腐 2.40 元。",
	}
	tests := map[string][]extract.Pick{
		"How much does a block of tofu cost?": {{0, "A block costs 2.40 dollars."}},
		"What is the capital of France?":      nil,
		"压干豆腐要多久？":                            {{2, "豆腐要先压干水分。"}},
		"What is the brand colour?":           {{1, "Our brand colour is teal."}},
	}
	for q, want := range tests {
		if diff := cmp.Diff(want, extract.Best(q, passages, 3)); diff != "" {
			t.Errorf("Best(%q) (-want +got):\n%s", q, diff)
		}
	}
}
