package api_test

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/reelforge/reelforge/host/api"
	"github.com/reelforge/reelforge/host/auth"
	"github.com/reelforge/reelforge/host/config"
	"github.com/reelforge/reelforge/host/kb"
	"github.com/reelforge/reelforge/host/kb/embed/embedtest"
)

// batchAnswer is the data of a batch/text answer.
type batchAnswer struct {
	docs       []map[string]any
	failed     []map[string]any
	chunks     int
	duplicates []any
}

func readBatch(t *testing.T, r resp) batchAnswer {
	t.Helper()
	if r.status != 200 {
		t.Fatalf("batch/text = %d %s", r.status, r.raw)
	}
	var a batchAnswer
	for _, d := range r.data("documents").([]any) {
		a.docs = append(a.docs, d.(map[string]any))
	}
	for _, f := range r.data("failed").([]any) {
		a.failed = append(a.failed, f.(map[string]any))
	}
	a.chunks = int(r.data("chunks_count").(float64))
	a.duplicates, _ = r.data("duplicates").([]any)
	return a
}

// TestKnowledgeBatchTextAnswer: the answer of batch/text says, for each item by its index, what
// became of it: its document (a duplicate or written), or its failure with the catalogue code.
// chunks_count counts the chunks this call wrote, not those of duplicates. An item with a field of
// the wrong type fails alone, naming the field.
func TestKnowledgeBatchTextAnswer(t *testing.T) {
	t.Parallel()
	for _, dc := range drivers() {
		t.Run(dc.name, func(t *testing.T) {
			t.Parallel()
			b := kbSetup(t, dc.open)
			alice, _ := b.user("kbb-alice-" + dc.name)
			long := strings.Repeat("The heron shot needs a long lens and a quiet morning by the water. ", 40)
			first := readBatch(t, b.do("POST", "/api/knowledge/batch/text", alice, map[string]any{"items": []any{
				map[string]any{"text": long, "source_name": "herons", "visibility": "private"}}}))
			if len(first.docs) != 1 || first.chunks < 2 || first.docs[0]["index"] != 0.0 || first.docs[0]["duplicate"] != false {
				t.Fatalf("first batch: %d chunks, documents %v; want one new document of index 0 with 2 chunks or more", first.chunks, first.docs)
			}
			again := readBatch(t, b.do("POST", "/api/knowledge/batch/text", alice, map[string]any{"items": []any{
				map[string]any{"text": long, "source_name": "herons", "visibility": "private"},
				map[string]any{"text": ""},
				map[string]any{"text": "A short note on egrets.", "source_name": "herons", "visibility": "private"},
				map[string]any{"text": "A note with a numeric title.", "title": 5},
				"not an object",
			}}))
			if again.chunks != 1 {
				t.Errorf("chunks_count = %d, want 1: the duplicate's chunks were not written by this call", again.chunks)
			}
			if len(again.docs) != 2 ||
				again.docs[0]["index"] != 0.0 || again.docs[0]["duplicate"] != true || again.docs[0]["id"] != first.docs[0]["id"] ||
				again.docs[1]["index"] != 2.0 || again.docs[1]["duplicate"] != false {
				t.Errorf("documents = %v; want item 0 as a duplicate of %v, then item 2 written", again.docs, first.docs[0]["id"])
			}
			want := map[float64]string{1: "text", 3: "title: must be of type string", 4: "item must be an object"}
			if len(again.failed) != len(want) {
				t.Errorf("failed = %v; want items 1, 3 and 4", again.failed)
			}
			for _, f := range again.failed {
				i, _ := f["index"].(float64)
				msg, _ := f["error"].(string)
				if want[i] == "" || !strings.Contains(msg, want[i]) || f["code"] != "VALIDATION_ERROR" || f["errno"] != 1001.0 {
					t.Errorf("failed entry %v; want item %v's error containing %q, code VALIDATION_ERROR, errno 1001", f, i, want[i])
				}
			}
			if fmt.Sprint(again.duplicates) != "[0]" {
				t.Errorf("duplicates = %v, want [0]", again.duplicates)
			}
		})
	}
}

// TestKnowledgeBatchTextTwiceAtOnce: the same batch sent twice at once (the second while the
// first is still indexing) writes each document once: for every item, one call answers it
// written and the other a duplicate of the same document; no item fails; the two chunks_count
// add up to the chunks stored.
func TestKnowledgeBatchTextTwiceAtOnce(t *testing.T) {
	t.Parallel()
	for _, dc := range drivers() {
		t.Run(dc.name, func(t *testing.T) {
			t.Parallel()
			cfg := config.Defaults()
			cfg.JWTSecret = "test-secret-test-secret-test-secret"
			cfg.DataDir = t.TempDir()
			st := dc.open(t)
			held := embedtest.NewHeld()
			s := &api.Server{Config: &cfg, Store: st, Auth: auth.New(st, cfg.JWTSecret, bcrypt.MinCost),
				Log: slog.New(slog.DiscardHandler), KB: kb.New(st, kb.Options{Embedder: held})}
			b := &testBundle{t: t, app: s.App(), st: st}
			alice, _ := b.user("kbt-alice-" + dc.name)
			items := make([]any, 2*kb.BatchGroup+3)
			for i := range items {
				items[i] = map[string]any{"text": fmt.Sprintf("Note %d on the ibis%d shot. %s", i, i, strings.Repeat("Keep the sun behind the bird. ", 50)),
					"source_name": "ibis", "visibility": "private"}
			}
			var out [2]resp
			var wg sync.WaitGroup
			wg.Go(func() { out[0] = b.do("POST", "/api/knowledge/batch/text", alice, map[string]any{"items": items}) })
			<-held.Started
			wg.Go(func() { out[1] = b.do("POST", "/api/knowledge/batch/text", alice, map[string]any{"items": items}) })
			time.Sleep(300 * time.Millisecond) // the second call meets documents still being indexed
			close(held.Release)
			wg.Wait()
			answers := [2]batchAnswer{readBatch(t, out[0]), readBatch(t, out[1])}
			stored := 0
			byIndex := map[float64][]map[string]any{}
			for _, a := range answers {
				if len(a.failed) != 0 {
					t.Errorf("failed = %v; want none", a.failed)
				}
				for _, d := range a.docs {
					i, ok := d["index"].(float64)
					if !ok {
						t.Fatalf("document without its item's index: %v", d)
					}
					byIndex[i] = append(byIndex[i], d)
				}
			}
			for i := range items {
				ds := byIndex[float64(i)]
				if len(ds) != 2 || ds[0]["id"] != ds[1]["id"] || ds[0]["duplicate"] == ds[1]["duplicate"] {
					t.Errorf("item %d: %v; want one written and one duplicate of the same document", i, ds)
					continue
				}
				stored += int(ds[0]["chunk_count"].(float64))
			}
			if answers[0].chunks+answers[1].chunks != stored {
				t.Errorf("chunks_count %d + %d; want %d, the chunks stored", answers[0].chunks, answers[1].chunks, stored)
			}
		})
	}
}

// TestKnowledgeBatchTextBodies: a batch/text body that does not validate is answered as any
// route's (400 VALIDATION_ERROR naming the field), whether its items are all texts (read in one
// pass) or not (read as huma reads a body, then item by item); an item that is not a text fails
// alone, naming its field.
func TestKnowledgeBatchTextBodies(t *testing.T) {
	t.Parallel()
	b := kbSetup(t, drivers()[0].open)
	alice, _ := b.user("kbv-alice")
	text := map[string]any{"text": "The egret waits at the edge of the reeds.", "source_name": "egrets", "visibility": "private"}
	many := make([]any, 101)
	for i := range many {
		many[i] = text
	}
	for _, c := range []struct {
		name    string
		body    any
		message string // "": 200
		details bool
	}{
		{"no items", map[string]any{"items": []any{}}, "items: must hold at least 1 items", true},
		{"over 100 items", map[string]any{"items": many}, "items: must hold at most 100 items", true},
		{"over 100 items, one bad", map[string]any{"items": append([]any{5}, many[1:]...)}, "items: must hold at most 100 items", true},
		{"items missing", map[string]any{"texts": []any{text}}, "items: is required", true},
		{"items null", `{"items":null}`, "items: must be of type array", true},
		{"items an object", map[string]any{"items": text}, "items: must be of type array", true},
		{"a body that is no object", []any{text}, "must be of type object", false},
		{"malformed", `{"items":[{"text":"x"}`, "Malformed JSON body", false},
		{"data after the body", `{"items":[{"text":"x"}]} x`, "Malformed JSON body: data after the JSON value", false},
	} {
		r := b.do("POST", "/api/knowledge/batch/text", alice, c.body)
		e, _ := r.body["error"].(map[string]any)
		if r.status != 400 || r.code() != "VALIDATION_ERROR" || e["message"] != c.message || (e["details"] != nil) != c.details {
			t.Errorf("%s: %d %s, want 400 VALIDATION_ERROR %q (details: %v)", c.name, r.status, r.raw, c.message, c.details)
		}
	}
	a := readBatch(t, b.do("POST", "/api/knowledge/batch/text", alice, map[string]any{"items": []any{
		text, map[string]any{"text": 5}, nil, "a string"}}))
	if len(a.docs) != 1 || a.docs[0]["index"] != 0.0 || len(a.failed) != 3 {
		t.Fatalf("documents %v, failed %v; want item 0 written and items 1 to 3 failed", a.docs, a.failed)
	}
	for i, want := range []string{"text: must be of type string", "text: is required", "item must be an object"} {
		if msg, _ := a.failed[i]["error"].(string); a.failed[i]["index"] != float64(i+1) || !strings.HasPrefix(msg, want) {
			t.Errorf("failed[%d] = %v, want item %d: %q", i, a.failed[i], i+1, want)
		}
	}
}
