package api_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/reelforge/reelforge/host/api"
	"github.com/reelforge/reelforge/host/auth"
	"github.com/reelforge/reelforge/host/config"
	"github.com/reelforge/reelforge/host/manifest"
	"github.com/reelforge/reelforge/host/runs"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/sqlitestore"
	"github.com/reelforge/reelforge/internal/testtool"
	"github.com/reelforge/reelforge/plugins/node"
	"github.com/reelforge/reelforge/sdk/engine"
)

const testSecret = "callback-secret-for-tests-0123456789abcdef"

type env struct {
	t    *testing.T
	app  *fiber.App
	st   store.Driver
	runs *runs.Service
	auth *auth.Service
}

// newEnv serves the API over SQLite with the in-process node engine and the shipped manifests.
func newEnv(t *testing.T, quota int, reg *manifest.Registry) *env {
	t.Helper()
	return newEnvWith(t, quota, reg, nil)
}

// newEnvWith is newEnv with jobs as the dispatcher of generator jobs (nil: none, they fail).
func newEnvWith(t *testing.T, quota int, reg *manifest.Registry, jobs runs.JobDispatcher) *env {
	t.Helper()
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "db.sqlite"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if reg == nil {
		if reg, err = manifest.Load("../../manifests"); err != nil {
			t.Fatal(err)
		}
	}
	cfg := config.Defaults()
	cfg.CallbackSecret = testSecret
	cfg.FreeRunsPerDay = quota
	deps := runs.Deps{Store: st, Manifests: reg, InProcess: map[string]engine.Engine{"node": node.New(node.Options{RetryBackoff: time.Millisecond})}}
	if jobs != nil {
		deps.Jobs = func(*runs.Service) runs.JobDispatcher { return jobs }
	}
	svc := runs.New(deps, runs.Options{FreeRunsPerDay: quota, Poll: 50 * time.Millisecond, Workers: 4,
		SweepInterval: 50 * time.Millisecond, CallbackBaseURL: "http://127.0.0.1:3001"})
	svc.StartExecutor(ctx)
	svc.StartSweeper(ctx)
	t.Cleanup(func() { svc.StopSweeper(); svc.StopExecutor() })
	a := auth.New(st, "jwt-secret-for-tests-0123456789abcdef", 4)
	s := &api.Server{Config: &cfg, Store: st, Auth: a, Runs: svc, Log: slog.New(slog.DiscardHandler)}
	return &env{t: t, app: s.App(), st: st, runs: svc, auth: a}
}

type user struct {
	token string
	id    string
}

func (e *env) user(email string) user {
	e.t.Helper()
	sess, err := e.auth.Register(context.Background(), email, "password123", "u")
	if err != nil {
		e.t.Fatal(err)
	}
	return user{token: sess.Token, id: sess.User.ID}
}

func (e *env) do(u user, method, path string, body any) (int, map[string]any) {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req := httptest.NewRequest(method, path, rd)
	req.Header.Set("Content-Type", "application/json")
	if u.token != "" {
		req.Header.Set("Authorization", "Bearer "+u.token)
	}
	return e.send(req)
}

func (e *env) send(req *http.Request) (int, map[string]any) {
	e.t.Helper()
	res, err := testApp(e.t, e.app, req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(res.Body).Decode(&out)
	return res.StatusCode, out
}

func (e *env) wait(u user, runID string, states ...string) map[string]any {
	e.t.Helper()
	var body map[string]any
	if !testtool.Within(20*time.Second, func() bool {
		_, body = e.do(u, "GET", "/api/workflow/status/"+runID, nil)
		s, _ := body["status"].(string)
		return slices.Contains(states, s)
	}) {
		e.t.Fatalf("run %s: want %v, last %v", runID, states, body)
	}
	return body
}

// firstOf is the first element of xs, nil when there is none.
func firstOf(xs []any) any {
	if len(xs) == 0 {
		return nil
	}
	return xs[0]
}

func errCode(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func TestWorkflowLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 20, nil)
	alice, bob := e.user("alice@example.com"), e.user("bob@example.com")

	st, body := e.do(alice, "POST", "/api/workflow/start", map[string]any{"workflow": "nope", "inputs": map[string]any{}})
	if st != 404 || errCode(body) != "WORKFLOW_NOT_FOUND" {
		t.Errorf("start unknown = %d %v", st, body)
	}
	if st, body = e.do(alice, "POST", "/api/workflow/start", map[string]any{"inputs": map[string]any{}}); st != 400 {
		t.Errorf("start without workflow = %d %v", st, body)
	}
	if st, body = e.do(alice, "POST", "/api/workflow/start", map[string]any{"workflow": "content_plan_workflow", "inputs": map[string]any{"duration": "long"}}); st != 400 {
		t.Errorf("start with a bad input = %d %v", st, body)
	}
	// An input the workflow does not declare is accepted, and named in the warnings as ignored.
	st, body = e.do(alice, "POST", "/api/workflow/start", map[string]any{"workflow": "content_plan_workflow",
		"inputs": map[string]any{"topic": "coffee", "colour": "red"}})
	if st != 200 || body["status"] != "pending" || body["run_id"] == nil || body["workflow"] != "content_plan_workflow" {
		t.Fatalf("start = %d %v", st, body)
	}
	rid := body["run_id"].(string)
	final := e.wait(alice, rid, "completed", "failed")
	if final["status"] != "completed" || final["progress"].(float64) != 100 {
		t.Fatalf("final status = %v", final)
	}
	_, res := e.do(alice, "GET", "/api/workflow/result/"+rid, nil)
	for what, body := range map[string]map[string]any{"status": final, "result": res} {
		ws, _ := body["warnings"].([]any)
		if w, _ := firstOf(ws).(map[string]any); len(ws) != 1 || w["input"] != "colour" || w["code"] != "VALIDATION_ERROR" {
			t.Errorf("%s warnings = %v, want the input colour named as ignored", what, body["warnings"])
		}
	}
	trace, _ := res["trace"].([]any)
	if _, ok := res["outputs"].(map[string]any); !ok || len(trace) == 0 {
		t.Errorf("result = %v, want outputs and trace", res)
	}
	for _, s := range trace {
		step := s.(map[string]any)
		if step["engine"] != "node" || step["step_id"] == "" {
			t.Errorf("trace step %v: want engine node", step)
		}
	}
	_, tr := e.do(alice, "GET", "/api/workflow/trace/"+rid, nil)
	if got, _ := tr["trace"].([]any); len(got) != len(trace) {
		t.Errorf("trace route = %d steps, result %d", len(got), len(trace))
	}
	for _, path := range []string{"cancel", "resume", "retry"} {
		if st, body := e.do(alice, "POST", "/api/workflow/"+path+"/"+rid, map[string]any{"input": map[string]any{}}); st != 409 || errCode(body) != "WORKFLOW_INVALID_STATE" {
			t.Errorf("%s of a completed run = %d %v", path, st, body)
		}
	}
	for _, p := range []string{"GET /api/workflow/status/", "GET /api/workflow/result/", "GET /api/workflow/trace/", "POST /api/workflow/cancel/"} {
		m, path, _ := bytes.Cut([]byte(p), []byte(" "))
		if st, body := e.do(bob, string(m), string(path)+rid, nil); st != 404 || errCode(body) != "NOT_FOUND" {
			t.Errorf("%s of another user's run = %d %v", p, st, body)
		}
		if st, _ := e.do(alice, string(m), string(path)+"00000000-0000-0000-0000-000000000000", nil); st != 404 {
			t.Errorf("%s of an unknown run = %d", p, st)
		}
	}
	_, list := e.do(alice, "GET", "/api/workflow/runs?status=completed&workflow=content_plan_workflow", nil)
	if list["total"].(float64) != 1 {
		t.Errorf("runs listing = %v", list)
	}
	_, list = e.do(bob, "GET", "/api/workflow/runs", nil)
	if list["total"].(float64) != 0 {
		t.Errorf("bob's listing = %v", list)
	}
	_, ms := e.do(alice, "GET", "/api/workflow/manifests", nil)
	if got, _ := ms["manifests"].([]any); len(got) < 10 {
		t.Errorf("manifests = %v", ms)
	}
}

func TestPauseResumeCancel(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 20, nil)
	u := e.user("p@example.com")
	start := func() string {
		_, body := e.do(u, "POST", "/api/workflow/start", map[string]any{"workflow": "script_review",
			"inputs": map[string]any{"topic": "tea", "script": "Tea is good."}})
		return body["run_id"].(string)
	}
	rid := start()
	paused := e.wait(u, rid, "paused", "failed", "completed")
	aw, _ := paused["awaiting"].(map[string]any)
	if paused["status"] != "paused" || aw["step_id"] == nil || aw["prompt"] == nil {
		t.Fatalf("paused run = %v", paused)
	}
	st, body := e.do(u, "POST", "/api/workflow/resume/"+rid, map[string]any{"input": map[string]any{"approved": true, "note": "ok"}})
	if st != 200 || body["status"] != "running" {
		t.Fatalf("resume = %d %v", st, body)
	}
	if final := e.wait(u, rid, "completed", "failed"); final["status"] != "completed" {
		t.Errorf("after resume = %v", final)
	}
	rid = start()
	e.wait(u, rid, "paused")
	if st, body := e.do(u, "POST", "/api/workflow/cancel/"+rid, nil); st != 200 || body["status"] != "cancelled" {
		t.Errorf("cancel paused = %d %v", st, body)
	}
	if st, _ := e.do(u, "POST", "/api/workflow/cancel/"+rid, nil); st != 409 {
		t.Errorf("second cancel = %d, want 409", st)
	}
}

func TestFreeUserQuota(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2, nil)
	u := e.user("q@example.com")
	for i := range 3 {
		st, body := e.do(u, "POST", "/api/workflow/start", map[string]any{"workflow": "graphic", "inputs": map[string]any{"topic": "tea"}})
		if i < 2 && st != 200 {
			t.Fatalf("run %d = %d %v", i+1, st, body)
		}
		if i == 2 && (st != 429 || errCode(body) != "QUOTA_EXCEEDED") {
			t.Errorf("run 3 = %d %v, want 429 QUOTA_EXCEEDED", st, body)
		}
	}
}

// toggleDispatcher resolves generator jobs through the signed ai-callback route when on; off, it
// refuses them as a host without a generator does (the job fails).
type toggleDispatcher struct {
	on  atomic.Bool
	env *env
}

// Local implements runs.JobDispatcher: the jobs go out and call back (or never do).
func (d *toggleDispatcher) Local(string) bool { return false }

func (d *toggleDispatcher) Dispatch(ctx context.Context, job *engine.Job, callbackURL string) error {
	if !d.on.Load() {
		return errors.New("no generator answers")
	}
	go func() {
		raw, _ := json.Marshal(map[string]any{"job_id": job.JobID, "type": job.Type, "status": "completed",
			"result": map[string]any{"audio_url": "https://example.com/a.mp3"}})
		req := signed("/api/webhooks/ai-callback", raw, testSecret)
		d.env.send(req)
	}()
	return nil
}

func signed(path string, raw []byte, secret string) *http.Request {
	req := httptest.NewRequest("POST", path, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	if secret != "" {
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(raw)
		req.Header.Set("X-Signature", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	}
	return req
}

func TestRetryFromFailedStep(t *testing.T) {
	t.Parallel()
	// A workflow whose required generator step fails while no generator answers.
	zero := 0
	m := &manifest.Manifest{ID: "music_test", Name: "m", Version: "1", Engine: "node", Fallback: "node", Steps: []engine.Step{
		{ID: "write", Name: "Write", Agent: "script_writer", With: json.RawMessage(`{"format":"music"}`)},
		{ID: "song", Name: "Song", Agent: "generator", DependsOn: []string{"write"}, With: json.RawMessage(`{"job_type":"music"}`), Retries: &zero},
	}}
	engines, err := manifest.LoadEngines("../../manifests/engines")
	if err != nil {
		t.Fatal(err)
	}
	d := &toggleDispatcher{}
	e := newEnvWith(t, 20, manifest.NewRegistryWith(engines, m), d)
	d.env = e
	u := e.user("r@example.com")
	_, body := e.do(u, "POST", "/api/workflow/start", map[string]any{"workflow": "music_test", "inputs": map[string]any{"topic": "rain"}})
	rid := body["run_id"].(string)
	failed := e.wait(u, rid, "failed", "completed")
	if failed["status"] != "failed" || errCode(failed) == "" {
		t.Fatalf("run without a generator = %v, want failed with an error", failed)
	}
	_, tr := e.do(u, "GET", "/api/workflow/trace/"+rid, nil)
	first, _ := json.Marshal(tr["trace"].([]any)[0])

	d.on.Store(true)
	st, body := e.do(u, "POST", "/api/workflow/retry/"+rid, nil)
	if st != 200 || body["status"] != "pending" {
		t.Fatalf("retry = %d %v", st, body)
	}
	if final := e.wait(u, rid, "completed", "failed"); final["status"] != "completed" || final["attempt"].(float64) != 2 {
		t.Fatalf("retried run = %v", final)
	}
	_, tr = e.do(u, "GET", "/api/workflow/trace/"+rid, nil)
	again, _ := json.Marshal(tr["trace"].([]any)[0])
	if !bytes.Equal(first, again) {
		t.Errorf("the completed step ran again:\n%s\n%s", first, again)
	}
}

func TestCallbacks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 20, nil)
	ctx := context.Background()
	u := e.user("c@example.com")
	// A graph run waiting for its runner's callback.
	r := &store.Run{ID: "11111111-1111-1111-1111-111111111111", WorkflowID: "live", UserID: u.id, Status: store.RunRunning,
		Inputs: json.RawMessage(`{}`), UserContext: json.RawMessage(`{}`), Engine: "graph"}
	if err := e.st.CreateRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	job, err := e.runs.CreateJob(ctx, &engine.JobRequest{RunID: r.ID, StepID: "graph", Type: engine.JobGraph, Request: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(map[string]any{"run_id": r.ID, "job_id": job.JobID, "status": "completed",
		"outputs": map[string]any{"script": "tok-123"}, "metadata": map[string]any{"total_tokens": 42, "total_cost_usd": 0.01},
		"trace": []any{map[string]any{"step_id": "research", "step_name": "Research", "agent": "researcher", "status": "completed", "inputs": map[string]any{}},
			map[string]any{"step_id": "write", "step_name": "Write", "agent": "writer", "status": "completed", "inputs": map[string]any{}}}})
	for name, secret := range map[string]string{"missing": "", "wrong": "another-secret"} {
		st, body := e.send(signed("/api/webhooks/graph-callback", raw, secret))
		if st != 401 || errCode(body) != "CALLBACK_VERIFICATION_FAILED" || body["error"].(map[string]any)["errno"].(float64) != 4006 {
			t.Errorf("%s signature = %d %v", name, st, body)
		}
	}
	if got, _ := e.st.GetRun(ctx, r.ID); got.Status != store.RunRunning {
		t.Errorf("a refused callback changed the run to %s", got.Status)
	}
	st, body := e.send(signed("/api/webhooks/graph-callback", raw, testSecret))
	data, _ := body["data"].(map[string]any)
	if st != 200 || data["job_id"] != job.JobID || data["run_id"] != r.ID || data["duplicate"] != nil {
		t.Fatalf("signed callback = %d %v", st, body)
	}
	_, res := e.do(u, "GET", "/api/workflow/result/"+r.ID, nil)
	out, _ := json.Marshal(res["outputs"])
	if res["status"] != "completed" || !bytes.Contains(out, []byte("tok-123")) || len(res["trace"].([]any)) != 2 {
		t.Errorf("run after the callback = %v", res)
	}
	st, body = e.send(signed("/api/webhooks/graph-callback", raw, testSecret))
	data, _ = body["data"].(map[string]any)
	if st != 200 || data["duplicate"] != true || data["run_id"] != r.ID {
		t.Errorf("repeated callback = %d %v", st, body)
	}
	unknown, _ := json.Marshal(map[string]any{"job_id": "22222222-2222-2222-2222-222222222222", "status": "completed"})
	for _, path := range []string{"graph-callback", "automation-callback", "ai-callback"} {
		if st, body := e.send(signed("/api/webhooks/"+path, unknown, testSecret)); st != 404 || errCode(body) != "NOT_FOUND" {
			t.Errorf("%s for an unknown job = %d %v", path, st, body)
		}
	}
}
