package api_test

import (
	"strings"
	"testing"
)

// TestKnowledgeDeletes: a deleted document is gone from search (the service's caches too, right
// after a search filled them) and its listing, only its source's owner may delete it, and facts
// are deleted by their owner.
func TestKnowledgeDeletes(t *testing.T) {
	t.Parallel()
	for _, dc := range drivers() {
		t.Run(dc.name, func(t *testing.T) {
			t.Parallel()
			b := kbSetup(t, dc.open)
			alice, _ := b.user("del-alice-" + dc.name)
			bob, _ := b.user("del-bob-" + dc.name)
			ingest := func(text string) string {
				r := b.do("POST", "/api/knowledge/text", alice, map[string]any{"text": text, "source_name": "notes"})
				if r.status != 201 {
					t.Fatalf("POST /text = %d %s", r.status, r.raw)
				}
				return r.data("document").(map[string]any)["id"].(string)
			}
			gone := ingest("Quenthar Vell keeps the Zorblax lighthouse at night.")
			kept := ingest("Quenthar Vell paints the harbour at dawn.")
			search := func() string {
				r := b.do("POST", "/api/knowledge/search", alice, map[string]any{"query": "Quenthar Zorblax lighthouse"})
				if r.status != 200 {
					t.Fatalf("search = %d %s", r.status, r.raw)
				}
				return r.raw
			}
			if got := search(); !strings.Contains(got, gone) {
				t.Fatalf("before: search lacks the document: %s", got)
			}
			if r := b.do("DELETE", "/api/knowledge/documents/"+gone, bob, nil); r.status != 404 {
				t.Errorf("another user deletes = %d %s, want 404", r.status, r.raw)
			}
			r := b.do("DELETE", "/api/knowledge/documents/"+gone, alice, nil)
			del, _ := r.data("deleted").(map[string]any)
			if r.status != 200 || del["chunks_deleted"] != 1.0 || del["source_version"] != 3.0 {
				t.Fatalf("delete = %d %s, want 1 chunk and source version 3", r.status, r.raw)
			}
			if got := search(); strings.Contains(got, gone) || !strings.Contains(got, kept) {
				t.Errorf("after: search = %s, want the kept document only", got)
			}
			if r := b.do("GET", "/api/knowledge/documents/"+gone, alice, nil); r.status != 404 {
				t.Errorf("GET the deleted document = %d, want 404", r.status)
			}
			if r := b.do("GET", "/api/knowledge/documents", alice, nil); strings.Contains(r.raw, gone) {
				t.Errorf("the listing still has the deleted document: %s", r.raw)
			}
			if r := b.do("DELETE", "/api/knowledge/documents/"+gone, alice, nil); r.status != 404 {
				t.Errorf("second delete = %d, want 404", r.status)
			}

			if r := b.do("POST", "/api/knowledge/facts", alice, map[string]any{"key": "tone", "value": "warm"}); r.status != 201 {
				t.Fatalf("put fact = %d %s", r.status, r.raw)
			}
			if r := b.do("DELETE", "/api/knowledge/facts/tone", bob, nil); r.status != 404 {
				t.Errorf("another user deletes the fact = %d, want 404", r.status)
			}
			if r := b.do("DELETE", "/api/knowledge/facts/tone", alice, nil); r.status != 200 {
				t.Errorf("delete fact = %d %s", r.status, r.raw)
			}
			if r := b.do("GET", "/api/knowledge/facts", alice, nil); strings.Contains(r.raw, "warm") {
				t.Errorf("facts after the delete = %s", r.raw)
			}
		})
	}
}
