package kb_test

import (
	"context"
	"strings"
	"testing"

	"github.com/reelforge/reelforge/host/kb"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/storetest"
)

// An answer quotes a sentence once, however often the hits hold it: twice in one document, or once
// in each of two documents. Each fragment holding it is still cited, on the one quote.
func TestAskQuotesASentenceOnce(t *testing.T) {
	t.Parallel()
	const lamp = "The lighthouse lamp stands 12 metres above the rock."
	const steps = "Visitors climb 96 steps to reach the gallery, which opens at 10:00."
	for _, tc := range []struct {
		name  string
		texts []string
		cites string // the citations on the one quote
	}{
		{"one document", []string{lamp + "\n\n" + steps + "\n\n" + lamp}, "[#1]"},
		{"two documents", []string{lamp + "\n\n" + steps, "The harbour wall is older than the tower.\n\n" + lamp}, "[#1] [#2]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			forEachDriver(t, func(t *testing.T, d store.Driver, s *kb.Service) {
				ctx := context.Background()
				u := storetest.NewUser(t, d, "")
				for _, text := range tc.texts {
					ingest(t, s, kb.IngestParams{UserID: u.ID, SourceName: "notes", Visibility: store.VisibilityPrivate, Text: text})
				}
				ans, err := s.Ask(ctx, kb.SearchParams{UserID: u.ID, Query: "how high does the lighthouse lamp stand"})
				if err != nil {
					t.Fatal(err)
				}
				if n := strings.Count(ans.Answer, lamp); n != 1 || !strings.Contains(ans.Answer, lamp+" "+tc.cites) {
					t.Errorf("answer %q quotes %q %d times; want it once, cited %s", ans.Answer, lamp, n, tc.cites)
				}
				if len(ans.Citations) != strings.Count(tc.cites, "[#") {
					t.Errorf("citations %+v; want %s", ans.Citations, tc.cites)
				}
			})
		})
	}
}
