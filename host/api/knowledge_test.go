package api_test

import (
	"bytes"
	"log/slog"
	"mime/multipart"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/reelforge/reelforge/host/api"
	"github.com/reelforge/reelforge/host/auth"
	"github.com/reelforge/reelforge/host/config"
	"github.com/reelforge/reelforge/host/kb"
	"github.com/reelforge/reelforge/host/store"
)

func kbSetup(t *testing.T, open func(*testing.T) store.Driver) *testBundle {
	t.Helper()
	cfg := config.Defaults()
	cfg.JWTSecret = "test-secret-test-secret-test-secret"
	cfg.DataDir = t.TempDir()
	st := open(t)
	s := &api.Server{Config: &cfg, Store: st, Auth: auth.New(st, cfg.JWTSecret, bcrypt.MinCost),
		Log: slog.New(slog.DiscardHandler), KB: kb.New(st, kb.Options{})}
	return &testBundle{t: t, app: s.App(), st: st}
}

func multipartBody(t *testing.T, fields map[string]string, filename, content string) (string, string) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for k, v := range fields {
		_ = w.WriteField(k, v)
	}
	if filename != "" {
		fw, err := w.CreateFormFile("file", filename)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = fw.Write([]byte(content))
	}
	_ = w.Close()
	return buf.String(), w.FormDataContentType()
}

func TestKnowledgeRoutes(t *testing.T) {
	t.Parallel()
	for _, dc := range drivers() {
		t.Run(dc.name, func(t *testing.T) {
			t.Parallel()
			b := kbSetup(t, dc.open)
			alice, _ := b.user("kb-alice-" + dc.name)
			bob, _ := b.user("kb-bob-" + dc.name)
			pid := b.project(alice, "kb")
			r := b.do("POST", "/api/knowledge/text", alice, map[string]any{"text": "Quenthar Vell keeps the Zorblax lighthouse.",
				"source_name": "notes", "visibility": "private"})
			if r.status != 201 {
				t.Fatalf("POST /text = %d %s", r.status, r.raw)
			}
			docID := r.data("document").(map[string]any)["id"].(string)
			body, ct := multipartBody(t, map[string]string{"source_name": "files", "visibility": "project", "project_id": pid},
				"brand.md", "# Brand\n\nThe brand colour is Zorblax orange.")
			up := b.do("POST", "/api/knowledge/upload", alice, body, "Content-Type", ct)
			if up.status != 201 || up.data("chunks_count") != 1.0 {
				t.Fatalf("POST /upload = %d %s", up.status, up.raw)
			}
			// The multipart part's type is application/octet-stream (Go's and curl's for .md): the
			// stored type is the one the file is read as, from its extension.
			if mt := up.data("document").(map[string]any)["mime_type"]; mt != "text/markdown" {
				t.Errorf("uploaded brand.md: mime_type = %v, want text/markdown", mt)
			}
			exe, exeCT := multipartBody(t, map[string]string{"source_name": "files"}, "x.exe", "MZ")
			badOpts, badCT := multipartBody(t, map[string]string{"chunk_size": "4001"}, "a.txt", "text")
			foreign, foreignCT := multipartBody(t, map[string]string{"project_id": pid}, "a.txt", "text")
			badPID, badPIDCT := multipartBody(t, map[string]string{"project_id": "nope"}, "a.txt", "text")
			tests := []struct {
				Name, Method, URL, Token string
				Body                     any
				Headers                  []string
				WantStatus               int
				WantContains             string
			}{
				{"search", "POST", "/api/knowledge/search", alice, map[string]any{"query": "Zorblax lighthouse"}, nil, 200, `"scores"`},
				{"search GET form", "GET", "/api/knowledge/search?query=Zorblax&topK=1", alice, nil, nil, 200, `"chunks"`},
				{"search without query", "POST", "/api/knowledge/search", alice, map[string]any{"top_k": 3}, nil, 400, "VALIDATION_ERROR"},
				// top_k is 1 to 50 (absent: 5); an explicit 0 is refused like -3, not read as the default.
				{"search top_k 0", "POST", "/api/knowledge/search", alice, map[string]any{"query": "tea", "top_k": 0}, nil, 400, `"field":"top_k"`},
				{"search topK 0", "POST", "/api/knowledge/search", alice, map[string]any{"query": "tea", "topK": 0}, nil, 400, `"field":"topK"`},
				{"ask top_k 0", "POST", "/api/knowledge/ask", alice, map[string]any{"query": "tea", "top_k": 0}, nil, 400, `"field":"top_k"`},
				{"context top_k 0", "POST", "/api/knowledge/context", alice, map[string]any{"query": "tea", "top_k": 0}, nil, 400, `"field":"top_k"`},
				{"search GET topK 0", "GET", "/api/knowledge/search?query=tea&topK=0", alice, nil, nil, 400, `"field":"topK"`},
				{"search GET topK 51", "GET", "/api/knowledge/search?query=tea&topK=51", alice, nil, nil, 400, `"field":"topK"`},
				{"search top_k 2.5", "POST", "/api/knowledge/search", alice, map[string]any{"query": "tea", "top_k": 2.5}, nil, 400, "must be of type integer"},
				{"search top_k 1", "POST", "/api/knowledge/search", alice, map[string]any{"query": "Zorblax", "top_k": 1}, nil, 200, `"top_k":1`},
				{"search top_k absent", "POST", "/api/knowledge/search", alice, map[string]any{"query": "Zorblax"}, nil, 200, `"top_k":5`},
				// A project_id that is not a UUID is malformed input (400), not a project the caller may not use (403).
				{"text with a project_id not a UUID", "POST", "/api/knowledge/text", alice, map[string]any{"text": "tea", "project_id": "nope"}, nil, 400, `"field":"project_id"`},
				{"search with a project_id not a UUID", "POST", "/api/knowledge/search", alice, map[string]any{"query": "tea", "project_id": "nope"}, nil, 400, `"field":"project_id"`},
				{"sources with a project_id not a UUID", "GET", "/api/knowledge/sources?project_id=nope", alice, nil, nil, 400, `"field":"project_id"`},
				{"upload with a project_id not a UUID", "POST", "/api/knowledge/upload", alice, badPID, []string{"Content-Type", badPIDCT}, 400, `"field":"project_id"`},
				{"ask", "POST", "/api/knowledge/ask", alice, map[string]any{"question": "Who keeps the Zorblax lighthouse?"}, nil, 200, "[#1]"},
				{"ask of another user", "POST", "/api/knowledge/ask", bob, map[string]any{"query": "Who keeps the Zorblax lighthouse?"}, nil, 200, `"citations":[]`},
				{"context", "POST", "/api/knowledge/context", alice, map[string]any{"query": "brand colour", "project_id": pid}, nil, 200, "Zorblax orange"},
				{"context in another user's project", "POST", "/api/knowledge/context", bob, map[string]any{"query": "brand", "project_id": pid}, nil, 403, "Forbidden: project not accessible"},
				{"upload into another user's project", "POST", "/api/knowledge/upload", bob, foreign, []string{"Content-Type", foreignCT}, 403, "Forbidden"},
				{"upload exe", "POST", "/api/knowledge/upload", alice, exe, []string{"Content-Type", exeCT}, 400, "exe"},
				{"upload chunk_size 4001", "POST", "/api/knowledge/upload", alice, badOpts, []string{"Content-Type", badCT}, 400, "chunk_size"},
				{"document", "GET", "/api/knowledge/documents/" + docID, alice, nil, nil, 200, `"parse_status":"indexed"`},
				{"document of another user", "GET", "/api/knowledge/documents/" + docID, bob, nil, nil, 404, "NOT_FOUND"},
				{"sources of another user", "GET", "/api/knowledge/sources", bob, nil, nil, 200, `"total":0`},
				{"batch empty", "POST", "/api/knowledge/batch/text", alice, map[string]any{"items": []any{}}, nil, 400, "VALIDATION_ERROR"},
				{"batch with a bad item", "POST", "/api/knowledge/batch/text", alice, map[string]any{"items": []any{
					map[string]any{"text": "one", "visibility": "private"}, map[string]any{"text": ""}}}, nil, 200, `"index":1`},
				{"batch sent again: its text is a duplicate", "POST", "/api/knowledge/batch/text", alice, map[string]any{"items": []any{
					map[string]any{"text": "one", "visibility": "private"}, map[string]any{"text": ""}}}, nil, 200, `"duplicates":[0]`},
				{"facts", "POST", "/api/knowledge/facts", alice, map[string]any{"key": "tone", "value": "warm"}, nil, 201, `"fact"`},
				{"metrics", "GET", "/api/knowledge/metrics", alice, nil, nil, 200, "citation_coverage_pct_recent_200"},
				{"eval set", "GET", "/api/knowledge/eval-set", alice, nil, nil, 200, `"scenarios"`},
				{"eval run top_k 0", "POST", "/api/knowledge/eval/run-search", alice, map[string]any{"top_k": 0}, nil, 400, `"field":"top_k"`},
				{"eval run", "POST", "/api/knowledge/eval/run-search", alice, map[string]any{"scenario": "brand_facts"}, nil, 200, `"total":10`},
				{"feedback on an unknown query", "POST", "/api/knowledge/feedback/00000000-0000-0000-0000-000000000000", alice, map[string]any{"rating": 3}, nil, 404, "NOT_FOUND"},
				{"no token", "GET", "/api/knowledge/sources", "", nil, nil, 401, "AUTHENTICATION_ERROR"},
			}
			for _, tc := range tests {
				r := b.do(tc.Method, tc.URL, tc.Token, tc.Body, tc.Headers...)
				if r.status != tc.WantStatus || !strings.Contains(r.raw, tc.WantContains) {
					t.Errorf("%s: %s %s = %d %s; want %d containing %q", tc.Name, tc.Method, tc.URL, r.status, r.raw, tc.WantStatus, tc.WantContains)
				}
			}
			ask := b.do("POST", "/api/knowledge/ask", alice, map[string]any{"query": "Zorblax lighthouse keeper"})
			qid, _ := ask.data("query_id").(string)
			for _, fb := range []struct {
				token  string
				body   map[string]any
				status int
			}{
				{alice, map[string]any{"rating": 5, "notes": "good"}, 200},
				{alice, map[string]any{"rating": 3.5}, 400},
				{alice, map[string]any{"rating": 0}, 400},
				{alice, map[string]any{"rating": 4, "notes": strings.Repeat("x", 2001)}, 400},
				{bob, map[string]any{"rating": 3}, 404},
			} {
				if r := b.do("POST", "/api/knowledge/feedback/"+qid, fb.token, fb.body); r.status != fb.status {
					t.Errorf("feedback %v = %d %s; want %d", fb.body, r.status, r.raw, fb.status)
				}
			}
		})
	}
}
