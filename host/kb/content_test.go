package kb_test

import (
	"context"
	"strings"
	"testing"

	"github.com/reelforge/reelforge/host/kb"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/storetest"
)

func TestInternalSourcesAnswerButAreNotContent(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(t *testing.T, d store.Driver, s *kb.Service) {
		ctx := context.Background()
		u := storetest.NewUser(t, d, "")
		ingest(t, s, kb.IngestParams{UserID: u.ID, SourceName: "recipes", Visibility: store.VisibilityPrivate, Title: "tofu",
			Text: "## Crispy tofu\n\n- Press the quokka tofu for ten minutes\n- It costs 2.40 dollars a block\n"})
		res := ingest(t, s, kb.IngestParams{UserID: u.ID, SourceName: "policy", Visibility: store.VisibilityPrivate, Title: "posting policy",
			Text: "Quokka tofu posts need legal review before they go out. Sponsors are never named before signing.", Internal: true})
		if !res.Source.Internal() {
			t.Fatalf("source meta = %s, want internal", res.Source.Meta)
		}
		all, err := s.SearchFor(ctx, u.ID, "", "", "quokka tofu", 5)
		if err != nil || len(all) != 2 {
			t.Fatalf("SearchFor = %d hits, %v; want both sources (an internal source answers questions)", len(all), err)
		}
		ans, err := s.Ask(ctx, kb.SearchParams{UserID: u.ID, Query: "Do quokka tofu posts need legal review?", TopK: 5})
		if err != nil || !strings.Contains(ans.Answer, "legal review") {
			t.Errorf("Ask = %+v, %v; want the internal policy answered", ans, err)
		}
		hits, err := s.SearchForContent(ctx, u.ID, "", "", "quokka tofu", 5)
		if err != nil || len(hits) != 1 || hits[0].SourceName != "recipes" {
			t.Fatalf("SearchForContent = %+v, %v; want only the recipes", hits, err)
		}
		if want := "Press the quokka tofu for ten minutes.\nIt costs 2.40 dollars a block."; hits[0].ChunkText != want {
			t.Errorf("content text = %q, want %q", hits[0].ChunkText, want)
		}
		// Marking an existing source internal later takes effect too.
		ingest(t, s, kb.IngestParams{UserID: u.ID, SourceName: "recipes", Visibility: store.VisibilityPrivate, Title: "more",
			Text: "Quokka tofu loves garlic.", Internal: true})
		if hits, err := s.SearchForContent(ctx, u.ID, "", "", "quokka tofu", 5); err != nil || len(hits) != 0 {
			t.Errorf("SearchForContent after marking recipes internal = %+v, %v; want nothing", hits, err)
		}
	})
}
