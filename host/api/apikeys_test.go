package api_test

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/reelforge/reelforge/host/api"
	"github.com/reelforge/reelforge/host/auth"
	"github.com/reelforge/reelforge/host/config"
	"github.com/reelforge/reelforge/host/launch"
	"github.com/reelforge/reelforge/host/manifest"
	"github.com/reelforge/reelforge/host/runs"
	"github.com/reelforge/reelforge/host/scheduler"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/storetest"
	"github.com/reelforge/reelforge/plugins/node"
	"github.com/reelforge/reelforge/sdk/engine"
)

// runsLauncher adapts runs.Service to launch.Runner as host/app does.
type runsLauncher struct{ s *runs.Service }

func (l runsLauncher) Start(ctx context.Context, p launch.Params) (string, error) {
	r, err := l.s.Start(ctx, runs.StartParams{Workflow: p.Workflow, Inputs: p.Inputs, User: p.User, ProjectID: p.ProjectID,
		StrategyTaskID: p.StrategyTaskID, Trigger: p.Trigger, TriggeredBy: p.TriggeredBy})
	if err != nil {
		return "", err
	}
	return r.ID, nil
}

func (l runsLauncher) Check(_ context.Context, workflow string, inputs map[string]any) error {
	return l.s.Check(workflow, inputs)
}

func (l runsLauncher) Cancel(ctx context.Context, id string) error {
	_, err := l.s.CancelRun(ctx, id)
	return err
}

// setupRuns serves the API with real runs (the in-process node engine, the shipped manifests) and
// the scheduler, on one driver.
func setupRuns(t *testing.T, open func(*testing.T) store.Driver, quota int) (*testBundle, *scheduler.Scheduler) {
	t.Helper()
	st := open(t)
	reg, err := manifest.Load("../../manifests")
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Defaults()
	cfg.JWTSecret = "test-secret-test-secret-test-secret"
	cfg.DataDir = t.TempDir()
	cfg.FreeRunsPerDay = quota
	svc := runs.New(runs.Deps{Store: st, Manifests: reg, InProcess: map[string]engine.Engine{"node": node.New(node.Options{RetryBackoff: time.Millisecond})}},
		runs.Options{FreeRunsPerDay: quota, Poll: 50 * time.Millisecond, Workers: 2,
			SweepInterval: time.Second, CallbackBaseURL: "http://127.0.0.1:3001"})
	svc.StartExecutor(context.Background())
	t.Cleanup(svc.StopExecutor)
	sch := scheduler.New(st, scheduler.Options{Runner: runsLauncher{svc}, Known: func(id string) bool { _, ok := reg.Get(id); return ok },
		LockName: "test-" + storetest.SchemaName()})
	s := &api.Server{Config: &cfg, Store: st, Auth: auth.New(st, cfg.JWTSecret, bcrypt.MinCost), Runs: svc, Scheduler: sch,
		Log: slog.New(slog.DiscardHandler)}
	return &testBundle{t: t, app: s.App(), st: st}, sch
}

func (b *testBundle) tokenFor(u *store.User) string {
	b.t.Helper()
	tok, err := auth.New(b.st, "test-secret-test-secret-test-secret", bcrypt.MinCost).IssueAccess(u)
	if err != nil {
		b.t.Fatal(err)
	}
	return tok
}

// TestServiceKeys plays the automation tool with an automation key: an admin issues it (shown
// once, stored hashed), it reaches the scheduler API and the orchestrator but nothing else, the
// runs it starts belong to the project's owner (their status and lists, trigger scheduler,
// triggered_by the key's name) and count toward the owner's quota (429 with Retry-After), its use
// is listed, and revoking it refuses the next request.
func TestServiceKeys(t *testing.T) {
	t.Parallel()
	for _, d := range drivers() {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			b, sch := setupRuns(t, d.open, 2)
			ctx := context.Background()
			admin := b.tokenFor(storetest.NewUser(t, b.st, store.RoleAdmin))
			ownerU := storetest.NewUser(t, b.st, store.RoleFreeUser)
			owner := b.tokenFor(ownerU)
			other := b.tokenFor(storetest.NewUser(t, b.st, store.RoleFreeUser))
			pid := storetest.NewProject(t, b.st, ownerU.ID).ID

			// An ordinary user's pending-tasks is their own and is not the automation tool's heartbeat.
			if r := b.do("GET", "/api/scheduler/pending-tasks", owner, nil); r.status != 200 {
				t.Fatalf("owner pending-tasks = %d %s", r.status, r.raw)
			}
			if at := sch.LastAutomationCall(ctx); !at.IsZero() {
				t.Errorf("an ordinary user's pending-tasks recorded an automation call at %v", at)
			}

			if r := b.do("POST", "/api/admin/api-keys", owner, map[string]any{"name": "n8n", "scope": "automation"}); r.status != 403 {
				t.Errorf("non-admin creates a key = %d %s, want 403", r.status, r.raw)
			}
			r := b.do("POST", "/api/admin/api-keys", admin, map[string]any{"name": "n8n", "scope": "automation"})
			key, _ := r.data("key").(string)
			if r.status != 201 || !strings.HasPrefix(key, auth.KeyPrefix) {
				t.Fatalf("create key = %d %s", r.status, r.raw)
			}
			if r := b.do("POST", "/api/admin/api-keys", admin, map[string]any{"name": "n8n", "scope": "automation"}); r.status != 409 {
				t.Errorf("second live key named n8n = %d %s, want 409", r.status, r.raw)
			}
			if r := b.do("POST", "/api/admin/api-keys", admin, map[string]any{"name": "x", "scope": "root"}); r.status != 400 {
				t.Errorf("key of scope root = %d %s, want 400", r.status, r.raw)
			}

			// Its scope: the scheduler API and the orchestrator, nothing else.
			if r := b.do("GET", "/api/projects", key, nil); r.status != 403 || r.code() != "AUTHORIZATION_ERROR" {
				t.Errorf("automation key on /api/projects = %d %s, want 403", r.status, r.raw)
			}
			if r := b.do("GET", "/api/scheduler/pending-tasks", key, nil); r.status != 200 {
				t.Errorf("automation key pending-tasks = %d %s", r.status, r.raw)
			}
			if at := sch.LastAutomationCall(ctx); at.IsZero() {
				t.Errorf("the automation key's pending-tasks recorded no automation call")
			}
			if r := b.do("POST", "/api/orchestrator/run", key, map[string]any{"workflow_id": "graphic", "inputs": map[string]any{"topic": "x"}}); r.status != 400 {
				t.Errorf("orchestrator run of a key without project_id = %d %s, want 400", r.status, r.raw)
			}

			// Runs it starts are the owner's.
			r = b.do("POST", "/api/scheduler/trigger", key, map[string]any{"workflow_id": "graphic", "project_id": pid,
				"inputs": map[string]any{"summary": "s", "platform": "douyin"}, "trigger_source": "automation"})
			runID, _ := r.data("run_id").(string)
			if r.status != 200 || runID == "" {
				t.Fatalf("key trigger = %d %s", r.status, r.raw)
			}
			st := b.do("GET", "/api/workflow/status/"+runID, owner, nil)
			if st.status != 200 || st.body["trigger"] != "scheduler" || st.body["triggered_by"] != "n8n" {
				t.Errorf("owner's status of the key's run = %d %s, want 200 trigger scheduler triggered_by n8n", st.status, st.raw)
			}
			if st := b.do("GET", "/api/workflow/status/"+runID, other, nil); st.status != 404 {
				t.Errorf("another user's status of the run = %d, want 404", st.status)
			}
			list := b.do("GET", "/api/workflow/runs", owner, nil)
			if !strings.Contains(list.raw, runID) {
				t.Errorf("owner's run list lacks the key's run %s: %s", runID, list.raw)
			}
			r = b.do("POST", "/api/orchestrator/run", key, map[string]any{"workflow_id": "graphic", "project_id": pid, "inputs": map[string]any{"topic": "x"}})
			if r.status != 200 {
				t.Fatalf("key orchestrator run = %d %s", r.status, r.raw)
			}
			if run, err := b.st.GetRun(ctx, r.body["run_id"].(string)); err != nil || run.UserID != ownerU.ID || run.TriggeredBy != "n8n" {
				t.Errorf("orchestrator run = %+v, %v; want the owner's, triggered by n8n", run, err)
			}

			// Two runs of the owner's two a day: the third, whoever starts it, is over quota.
			r = b.do("POST", "/api/scheduler/trigger", key, map[string]any{"workflow_id": "graphic", "project_id": pid,
				"inputs": map[string]any{"summary": "s"}})
			ra, _ := strconv.Atoi(r.header.Get("Retry-After"))
			if r.status != 429 || r.code() != "QUOTA_EXCEEDED" || ra < 1 || ra > 86400 {
				t.Errorf("third run of a free owner = %d Retry-After %q %s, want 429 with 1..86400 s", r.status, r.header.Get("Retry-After"), r.raw)
			}
			if r := b.do("POST", "/api/workflow/start", owner, map[string]any{"workflow": "graphic", "inputs": map[string]any{"topic": "x"}}); r.status != 429 {
				t.Errorf("owner's own start after the key's runs = %d, want 429", r.status)
			}

			// Listed with its last use, never the key; revoked, the next request fails.
			l := b.do("GET", "/api/admin/api-keys", admin, nil)
			keys, _ := l.data("api_keys").([]any)
			if len(keys) != 1 || keys[0].(map[string]any)["last_used_at"] == nil || strings.Contains(l.raw, key) {
				t.Errorf("key list = %s, want one key with last_used_at and without the key", l.raw)
			}
			if r := b.do("DELETE", "/api/admin/api-keys/n8n", admin, nil); r.status != 200 {
				t.Fatalf("revoke = %d %s", r.status, r.raw)
			}
			if r := b.do("GET", "/api/scheduler/pending-tasks", key, nil); r.status != 401 {
				t.Errorf("revoked key = %d %s, want 401", r.status, r.raw)
			}
		})
	}
}
