package kb_test

import (
	"context"
	"strings"
	"testing"

	"github.com/reelforge/reelforge/host/kb"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/storetest"
)

// cookingNotes are a small knowledge base of a cooking creator, in both languages.
var cookingNotes = map[string]string{
	"tofu": "## Crispy tofu\n\nPress extra-firm tofu for ten minutes before frying. Fry it in a hot pan for 8 minutes, turning once. " +
		"A block of extra-firm tofu costs 2.40 dollars at the corner shop.",
	"sponsors": "| name | pay | channel |\n| --- | --- | --- |\n| OatBloom | 300 dollars a video | douyin |\n| Soyful | 180 dollars a video | bilibili |\n\n" +
		"OatBloom is an oat milk brand from Hangzhou.",
	"schedule": "# 更新计划\n\n每周二和周五晚上 8 点发布新视频。素食晚餐系列每集不超过 3 分钟。拍摄前一天准备好所有食材。",
	"pasta":    "Cook the lentil pasta for 7 minutes in salted water. Save a cup of the pasta water for the sauce.",
}

func cookingBase(t *testing.T, d store.Driver, s *kb.Service) string {
	t.Helper()
	u := storetest.NewUser(t, d, "")
	for title, text := range cookingNotes {
		ingest(t, s, kb.IngestParams{UserID: u.ID, SourceName: "cooking", Visibility: store.VisibilityPrivate, Title: title, Text: text})
	}
	return u.ID
}

func TestAskKnowsWhenItDoesNotKnow(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(t *testing.T, d store.Driver, s *kb.Service) {
		ctx := context.Background()
		user := cookingBase(t, d, s)
		for _, q := range []string{"What is the capital of France?", "Who wrote Pride and Prejudice?", "What is it?", "How does it work?",
			"法国的首都是哪里？", "这是什么？", "How much does a Tesla cost?", "比特币现在多少钱？", "How long does it take to fly to Paris?"} {
			a, err := s.Ask(ctx, kb.SearchParams{UserID: user, Query: q, TopK: 5})
			if err != nil {
				t.Fatal(err)
			}
			if a.Answer != kb.NoBasisAnswer || len(a.Citations) != 0 || a.Cited || a.Hits == nil {
				t.Errorf("Ask(%q) = %q with %d citations, want the no-basis answer without citations", q, a.Answer, len(a.Citations))
			}
			if hits, err := s.SearchForAnswer(ctx, user, "", "", q, 5); err != nil || len(hits) != 0 {
				t.Errorf("SearchForAnswer(%q) = %d hits, %v; want none (a chat has no basis either)", q, len(hits), err)
			}
		}
		for q, want := range map[string]string{
			"How much does OatBloom pay?":           "300 dollars a video",
			"How long should I press the tofu?":     "ten minutes",
			"How much does extra-firm tofu cost?":   "2.40 dollars",
			"Which brand pays 180 dollars a video?": "Soyful",
			"素食晚餐系列每集多长？":                           "不超过 3 分钟",
			"每周什么时候发布新视频？":                          "每周二和周五晚上 8 点",
			"How long do I cook lentil pasta?":      "7 minutes",
		} {
			a, err := s.Ask(ctx, kb.SearchParams{UserID: user, Query: q, TopK: 5})
			if err != nil {
				t.Fatal(err)
			}
			if hits, err := s.SearchForAnswer(ctx, user, "", "", q, 5); err != nil || len(hits) == 0 {
				t.Errorf("SearchForAnswer(%q) = %d hits, %v; want the grounding passage", q, len(hits), err)
			}
			first, _, _ := strings.Cut(a.Answer, "[#")
			if !strings.Contains(first, want) || len(a.Citations) == 0 {
				t.Errorf("Ask(%q) = %q, want its first sentence to hold %q, cited", q, a.Answer, want)
			}
			if strings.ContainsAny(a.Answer, "|#") && !strings.Contains(a.Answer, "[#") {
				t.Errorf("Ask(%q) = %q quotes markup", q, a.Answer)
			}
		}
	})
}

func TestAskCitesStoredFacts(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(t *testing.T, d store.Driver, s *kb.Service) {
		ctx := context.Background()
		user := cookingBase(t, d, s)
		if _, err := s.PutFact(ctx, user, "filming day", "We film every Sunday morning in the studio kitchen."); err != nil {
			t.Fatal(err)
		}
		a, err := s.Ask(ctx, kb.SearchParams{UserID: user, Query: "Which day is filming day?", TopK: 5})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(a.Answer, "every Sunday morning") || len(a.Citations) == 0 || a.Citations[0].Source != kb.FactSource {
			t.Fatalf("Ask = %q, citations %+v; want the stored fact, cited", a.Answer, a.Citations)
		}
		found := false
		for _, h := range a.Hits {
			found = found || h.ChunkID == a.Citations[0].ChunkID
		}
		if !found {
			t.Errorf("the fact's citation %q is not among the hits", a.Citations[0].ChunkID)
		}
	})
}
