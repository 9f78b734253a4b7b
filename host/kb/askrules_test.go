package kb_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/reelforge/reelforge/host/kb"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/storetest"
)

// episodeBase is a creator's notes on filmed episodes: every note holds the same words (production,
// budget, episode, filmed) but its own city and figure, so many passages ground the same question
// with the same coverage.
func episodeBase(t *testing.T, d store.Driver, s *kb.Service) string {
	t.Helper()
	u := storetest.NewUser(t, d, "")
	cities := []string{"Osaka", "Kraków", "Lisbon", "Tbilisi", "Porto", "Hanoi", "Valencia", "Gdansk"}
	for i, city := range cities {
		text := fmt.Sprintf("## Episode %d\n\nThis episode was filmed in %s over two days. The production budget for this episode was %d euros, "+
			"most of it for travel and the local crew.", i+1, city, 1200+137*i)
		ingest(t, s, kb.IngestParams{UserID: u.ID, SourceName: "episodes", Visibility: store.VisibilityPrivate, Title: "episode " + city, Text: text})
	}
	// Other notes share some of those words, so that each weighs differently (a coverage is then a
	// sum of different weights, whose rounding depends on the order of the sum).
	for i, text := range []string{"The production office moves in May.", "Production meetings are on Mondays.",
		"The budget review is every quarter.", "Budget lines are approved by the producer.", "A budget sheet is kept per season.",
		"The episode guide lists the new season.", "Each episode ends with a recipe card.", "The episode order changes in spring."} {
		ingest(t, s, kb.IngestParams{UserID: u.ID, SourceName: "episodes", Visibility: store.VisibilityPrivate, Title: fmt.Sprint("note ", i), Text: text})
	}
	return u.ID
}

// The same question over the same base gets the same answer and the same hits, in the same order,
// every time: passages holding the same question terms must not trade places from call to call.
func TestAskIsDeterministic(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(t *testing.T, d store.Driver, s *kb.Service) {
		ctx := context.Background()
		user := episodeBase(t, d, s)
		p := kb.SearchParams{UserID: user, Query: "What was the production budget of the filmed episode?", TopK: 5}
		var first *kb.Answer
		ids := func(a *kb.Answer) []string {
			var out []string
			for _, h := range a.Hits {
				out = append(out, h.ChunkID)
			}
			return out
		}
		for i := range 30 {
			a, err := s.Ask(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if first == nil {
				first = a
				if len(a.Hits) < 2 {
					t.Fatalf("Ask = %q with %d hits; want several grounding passages", a.Answer, len(a.Hits))
				}
				continue
			}
			if a.Answer != first.Answer || !slices.Equal(ids(a), ids(first)) {
				t.Fatalf("call %d: answer %q, hits %v; call 1: %q, hits %v", i+1, a.Answer, ids(a), first.Answer, ids(first))
			}
		}
	})
}

// A one-letter question has no informative term (README: two at least): the Q of an FAQ is no
// evidence.
func TestAskOneLetterHasNoBasis(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(t *testing.T, d store.Driver, s *kb.Service) {
		ctx := context.Background()
		u := storetest.NewUser(t, d, "")
		ingest(t, s, kb.IngestParams{UserID: u.ID, SourceName: "faq", Visibility: store.VisibilityPrivate, Title: "sponsor faq",
			Text: "Q: When do sponsors pay?\nA: Within 30 days of the video going live.\n\nQ: Can a sponsor ask for a reshoot?\nA: Once, at their cost."})
		for _, q := range []string{"Q", "q?", "What is Q?"} {
			a, err := s.Ask(ctx, kb.SearchParams{UserID: u.ID, Query: q, TopK: 5})
			if err != nil {
				t.Fatal(err)
			}
			if a.Answer != kb.NoBasisAnswer || len(a.Citations) != 0 || len(a.Hits) != 0 {
				t.Errorf("Ask(%q) = %q with %d citations; want the no-basis answer", q, a.Answer, len(a.Citations))
			}
		}
		a, err := s.Ask(ctx, kb.SearchParams{UserID: u.ID, Query: "When do sponsors pay?", TopK: 5})
		if err != nil || len(a.Citations) == 0 {
			t.Errorf("Ask(when do sponsors pay) = %q, %v; want the FAQ, cited", a.Answer, err)
		}
	})
}

// English word forms match, those of a word ending in e (name, named) too.
func TestAskMatchesWordForms(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(t *testing.T, d store.Driver, s *kb.Service) {
		ctx := context.Background()
		u := storetest.NewUser(t, d, "")
		for title, text := range map[string]string{
			"team":     "Our mascot is a red panda named Momo. Momo appears at the end of every video.",
			"gear":     "We film on two mirrorless cameras and record sound with a shotgun microphone.",
			"schedule": "New videos are released every Tuesday at 18:00.",
			"channel":  "The channel was renamed in 2023 after the move to Lisbon.",
		} {
			ingest(t, s, kb.IngestParams{UserID: u.ID, SourceName: "notes", Visibility: store.VisibilityPrivate, Title: title, Text: text})
		}
		for _, q := range []string{"What is the name of our mascot?", "What name does our mascot have?", "What is our mascot named?",
			"When do new videos release?"} {
			a, err := s.Ask(ctx, kb.SearchParams{UserID: u.ID, Query: q, TopK: 5})
			if err != nil {
				t.Fatal(err)
			}
			if a.Answer == kb.NoBasisAnswer || len(a.Citations) == 0 {
				t.Errorf("Ask(%q) = %q; want a cited answer", q, a.Answer)
			}
		}
		a, err := s.Ask(ctx, kb.SearchParams{UserID: u.ID, Query: "What is the name of the capital of France?", TopK: 5})
		if err != nil || a.Answer != kb.NoBasisAnswer {
			t.Errorf("Ask(capital of France) = %q, %v; want the no-basis answer", a.Answer, err)
		}
	})
}

// A passage that shares a question's common words but none of its names is about another thing
// when a passage holds one: the budget of the Kraków episode does not answer for Osaka.
func TestAskKeepsToTheNamedSubject(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(t *testing.T, d store.Driver, s *kb.Service) {
		ctx := context.Background()
		user := episodeBase(t, d, s)
		a, err := s.Ask(ctx, kb.SearchParams{UserID: user, Query: "What was the production budget of the episode filmed in Osaka?", TopK: 5})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(a.Answer, "1200 euros") || strings.Count(a.Answer, "euros") != 1 || len(a.Hits) != 1 {
			t.Errorf("Ask(Osaka) = %q with %d hits; want the Osaka episode's budget (1200 euros) only", a.Answer, len(a.Hits))
		}
	})
}
