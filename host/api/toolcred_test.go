package api_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"golang.org/x/crypto/bcrypt"

	"github.com/reelforge/reelforge/host/api"
	"github.com/reelforge/reelforge/host/auth"
	"github.com/reelforge/reelforge/host/config"
	"github.com/reelforge/reelforge/host/kb"
	"github.com/reelforge/reelforge/host/runs"
	"github.com/reelforge/reelforge/host/store"
)

// TestToolCredential plays the external tool a run hands its credential to (auth.ToolGrant): it
// reads the run owner's knowledge in the run's project through /api/knowledge/context and /search,
// never another user's nor another project's; every other route refuses it (403), a forged or
// expired one is refused (401), and once its run has ended it is refused too (401).
func TestToolCredential(t *testing.T) {
	t.Parallel()
	for _, dc := range drivers() {
		t.Run(dc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			cfg := config.Defaults()
			cfg.JWTSecret = "test-secret-test-secret-test-secret"
			cfg.DataDir = t.TempDir()
			st := dc.open(t)
			authSvc := auth.New(st, cfg.JWTSecret, bcrypt.MinCost)
			svc := runs.New(runs.Deps{Store: st, Credentials: authSvc}, runs.Options{})
			s := &api.Server{Config: &cfg, Store: st, Auth: authSvc, Runs: svc, Log: slog.New(slog.DiscardHandler),
				KB: kb.New(st, kb.Options{})}
			b := &testBundle{t: t, app: s.App(), st: st}

			alice, aliceID := b.user("tool-alice-" + dc.name)
			bob, _ := b.user("tool-bob-" + dc.name)
			pid := b.project(alice, "tool")
			other := b.project(alice, "other")
			for _, w := range []struct {
				tok, text, project string
			}{
				{alice, "The Quorvath kiln fires for forty-five minutes.", pid},
				{alice, "Quorvath glaze notes of the other project.", other},
				{bob, "Bob's Quorvath secret recipe.", ""},
			} {
				body := map[string]any{"text": w.text, "source_name": "notes", "visibility": "private"}
				if w.project != "" {
					body["project_id"], body["visibility"] = w.project, "project"
				}
				if r := b.do("POST", "/api/knowledge/text", w.tok, body); r.status != 201 {
					t.Fatalf("POST /text = %d %s", r.status, r.raw)
				}
			}

			pc, _ := json.Marshal(map[string]any{"project_id": pid})
			run := &store.Run{ID: uuid.NewString(), WorkflowID: "kb_chat", UserID: aliceID, ProjectID: pid, Status: store.RunPending,
				Inputs: json.RawMessage(`{}`), ProjectContext: pc, Trigger: store.TriggerManual, Attempt: 1}
			if err := st.CreateRun(ctx, run); err != nil {
				t.Fatal(err)
			}
			tok, err := authSvc.IssueTool(auth.ToolGrant{UserID: aliceID, ProjectID: pid, RunID: run.ID, Expires: time.Now().Add(time.Hour)})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(tok, auth.ToolPrefix) || strings.Contains(auth.Redact(tok), tok[len(auth.ToolPrefix)+8:]) {
				t.Fatalf("credential %q, redacted %q", tok, auth.Redact(tok))
			}

			// The knowledge routes, as the run's owner, in the run's project only.
			r := b.do("POST", "/api/knowledge/context", tok, map[string]any{"query": "Quorvath kiln"})
			if r.status != 200 || !strings.Contains(r.raw, "forty-five") || strings.Contains(r.raw, "other project") || strings.Contains(r.raw, "Bob") {
				t.Fatalf("context = %d %s", r.status, r.raw)
			}
			if r := b.do("POST", "/api/knowledge/search", tok, map[string]any{"query": "Quorvath", "project_id": pid}); r.status != 200 ||
				!strings.Contains(r.raw, "forty-five") || strings.Contains(r.raw, "Bob") {
				t.Fatalf("search = %d %s", r.status, r.raw)
			}
			if r := b.do("GET", "/api/knowledge/search?query=Quorvath", tok, nil); r.status != 200 || strings.Contains(r.raw, "other project") {
				t.Fatalf("GET search = %d %s", r.status, r.raw)
			}
			if r := b.do("POST", "/api/knowledge/search", tok, map[string]any{"query": "Quorvath", "project_id": other}); r.status != 403 {
				t.Errorf("search of another project = %d %s, want 403", r.status, r.raw)
			}

			// Everything else refuses it, reading or writing.
			for _, c := range []struct{ method, path string }{
				{"GET", "/api/auth/me"}, {"GET", "/api/projects"}, {"GET", "/api/projects/" + pid},
				{"POST", "/api/knowledge/text"}, {"POST", "/api/knowledge/ask"}, {"GET", "/api/knowledge/documents"},
				{"GET", "/api/knowledge/context"}, {"GET", "/api/workflow/runs"}, {"GET", "/api/workflow/status/" + run.ID},
				{"POST", "/api/workflow/start"}, {"POST", "/api/ai/chat"}, {"GET", "/api/scheduler/pending-tasks"},
				{"POST", "/api/admin/api-keys"},
			} {
				var body any
				if c.method == "POST" {
					body = map[string]any{"text": "x", "query": "x"}
				}
				if r := b.do(c.method, c.path, tok, body); r.status != 403 && r.status != 404 && r.status != 405 {
					t.Errorf("%s %s with the tool credential = %d %s, want a refusal", c.method, c.path, r.status, r.raw)
				} else if r.status == 200 || r.status == 201 {
					t.Errorf("%s %s answered", c.method, c.path)
				}
			}

			// Forged, expired, another secret's: 401.
			expired, _ := authSvc.IssueTool(auth.ToolGrant{UserID: aliceID, ProjectID: pid, RunID: run.ID, Expires: time.Now().Add(-time.Minute)})
			foreign, _ := auth.New(st, "another-secret-another-secret-another", bcrypt.MinCost).IssueTool(
				auth.ToolGrant{UserID: aliceID, ProjectID: pid, RunID: run.ID, Expires: time.Now().Add(time.Hour)})
			for name, bad := range map[string]string{"expired": expired, "foreign": foreign, "truncated": tok[:len(tok)-4],
				"bare jwt": strings.TrimPrefix(tok, auth.ToolPrefix)} {
				if r := b.do("POST", "/api/knowledge/context", bad, map[string]any{"query": "kiln"}); r.status != 401 {
					t.Errorf("%s credential = %d %s, want 401", name, r.status, r.raw)
				}
			}

			// The run ends: its credential dies with it.
			if _, err := st.UpdateRun(ctx, run.ID, store.RunUpdate{From: []string{store.RunPending}, Status: store.RunCancelled}); err != nil {
				t.Fatal(err)
			}
			if r := b.do("POST", "/api/knowledge/context", tok, map[string]any{"query": "kiln"}); r.status != 401 {
				t.Errorf("after the run ended = %d %s, want 401", r.status, r.raw)
			}
		})
	}
}
