package runs_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/auth"
	"github.com/reelforge/reelforge/host/manifest"
	"github.com/reelforge/reelforge/host/runs"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/pgstore"
	"github.com/reelforge/reelforge/host/store/sqlitestore"
	"github.com/reelforge/reelforge/host/store/storetest"
	"github.com/reelforge/reelforge/internal/testtool"
	"github.com/reelforge/reelforge/plugins/node"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

func openStore(t *testing.T) store.Driver { return openSQLite(t, nil) }

// openSQLite opens a SQLite store with clock (nil: time.Now).
func openSQLite(t *testing.T, clock func() time.Time) store.Driver {
	t.Helper()
	st, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "db.sqlite"), sqlitestore.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// databases are the stores a test runs on: SQLite, and PostgreSQL when TEST_DATABASE_URL is set.
var databases = map[string]func(t *testing.T) store.Driver{
	"sqlite":   openStore,
	"postgres": openPostgres,
}

// openPostgres opens a store in a fresh schema of TEST_DATABASE_URL (or skips the test), dropped
// at the end of the test.
func openPostgres(t *testing.T) store.Driver { return openPostgresClock(t, nil) }

// openPostgresClock is openPostgres with the store's clock (nil: time.Now).
func openPostgresClock(t *testing.T, clock func() time.Time) store.Driver {
	t.Helper()
	url := storetest.PostgresURL(t)
	schema := storetest.SchemaName()
	st, err := pgstore.Open(context.Background(), url, pgstore.Options{Schema: schema, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		st.Close()
		storetest.DropSchema(url, schema)
	})
	return st
}

// graphManifest is a graph-engine workflow with node steps for degradation.
func graphManifest() *manifest.Manifest {
	return &manifest.Manifest{ID: "g", Name: "g", Version: "1", Engine: "graph", Fallback: "node", Timeout: time.Minute,
		Steps: []engine.Step{{ID: "write", Name: "Write", Agent: "script_writer"}}}
}

func newService(t *testing.T, deps runs.Deps, opts runs.Options) *runs.Service {
	t.Helper()
	opts.Poll, opts.SweepInterval = 20*time.Millisecond, 20*time.Millisecond
	if opts.Lease == 0 {
		opts.Lease = 3 * time.Second
	}
	if deps.InProcess == nil {
		deps.InProcess = map[string]engine.Engine{"node": node.New(node.Options{RetryBackoff: time.Millisecond})}
	}
	return runs.New(deps, opts)
}

// testRegistry holds ms and the repository's engine registry (manifests/engines).
func testRegistry(t *testing.T, ms ...*manifest.Manifest) *manifest.Registry {
	t.Helper()
	engines, err := manifest.LoadEngines("../../manifests/engines")
	if err != nil {
		t.Fatal(err)
	}
	return manifest.NewRegistryWith(engines, ms...)
}

// registry loads the repository's workflow manifests.
func registry(t *testing.T) *manifest.Registry {
	t.Helper()
	reg, err := manifest.Load("../../manifests")
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func newUser(t *testing.T, st store.Driver) *auth.Principal {
	t.Helper()
	u := &store.User{ID: uuid.NewString(), Email: uuid.NewString() + "@example.com", Username: "u", PasswordHash: "x", Role: store.RoleUser}
	if err := st.CreateUser(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	return &auth.Principal{UserID: u.ID, Role: u.Role, Username: u.Username}
}

func waitStatus(t *testing.T, st store.Driver, id string, want ...string) *store.Run {
	t.Helper()
	var r *store.Run
	if !testtool.Within(15*time.Second, func() bool {
		var err error
		if r, err = st.GetRun(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		return slices.Contains(want, r.Status)
	}) {
		t.Fatalf("run %s is %s, want %v", id, r.Status, want)
	}
	return r
}

// A run left running by a dead host (lease expired) is claimed again and finishes, reusing the
// steps it completed.
func TestRestartPicksUpExpiredLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openStore(t)
	reg := registry(t)
	p := newUser(t, st)
	r := &store.Run{ID: uuid.NewString(), WorkflowID: "content_plan_workflow", UserID: p.UserID, Inputs: json.RawMessage(`{"topic":"tea"}`),
		UserContext: json.RawMessage(`{"user_id":"` + p.UserID + `"}`)}
	if err := st.CreateRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ClaimRun(ctx, "dead-host", time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if _, err := st.UpdateRun(ctx, r.ID, store.RunUpdate{From: []string{store.RunPending}, Status: store.RunRunning, Started: true}); err != nil {
		t.Fatal(err)
	}
	done := json.RawMessage(`{"step_id":"research","step_name":"Look up","agent":"kb_lookup","status":"completed","inputs":{},"outputs":{"hits":[],"marker":"from-the-dead-host"}}`)
	if err := st.UpsertTraceStep(ctx, &store.TraceStep{RunID: r.ID, StepID: "research", Status: "completed", Step: done}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond) // the subject: the dead host's lease of 1 ms runs out by the clock

	s := newService(t, runs.Deps{Store: st, Manifests: reg}, runs.Options{})
	var finished atomic.Int32
	s.OnFinish(func(ctx context.Context, r *store.Run) { finished.Add(1) })
	s.StartExecutor(ctx)
	defer s.StopExecutor()
	got := waitStatus(t, st, r.ID, store.RunCompleted, store.RunFailed)
	if got.Status != store.RunCompleted {
		t.Fatalf("recovered run = %s %s", got.Status, got.Error)
	}
	steps, _ := st.ListTraceSteps(ctx, r.ID)
	if len(steps) < 2 || string(steps[0].Step) != string(done) {
		t.Errorf("trace after recovery = %d steps, first %s; want the completed step kept as it was", len(steps), steps[0].Step)
	}
	testtool.Eventually(t, 10*time.Second, "OnFinish", func() bool { return finished.Load() >= 1 })
	if n := finished.Load(); n != 1 {
		t.Errorf("OnFinish called %d times, want 1", n)
	}
}

// fakePlugins serves one fake engine for "graph".
type fakePlugins struct{ eng engine.Engine }

func (f fakePlugins) Engine(name string) (engine.Engine, error) {
	if name == "graph" && f.eng != nil {
		return f.eng, nil
	}
	return nil, errcode.New(errcode.ExternalService, "engine "+name+" plugin is degraded")
}

// waitingEngine creates a graph job and waits for its callback, which never comes.
type waitingEngine struct {
	runs      atomic.Int32
	mu        sync.Mutex
	cancelled []string
	block     bool
}

func (w *waitingEngine) Info(context.Context) (*engine.Info, error) {
	return &engine.Info{Name: "graph"}, nil
}
func (w *waitingEngine) Health(context.Context) error { return nil }
func (w *waitingEngine) Cancel(_ context.Context, req *engine.CancelRequest) error {
	w.mu.Lock()
	w.cancelled = append(w.cancelled, req.RunID)
	w.mu.Unlock()
	return nil
}
func (w *waitingEngine) Callback(context.Context, engine.Host, *engine.CallbackRequest) (*engine.RunResult, error) {
	return &engine.RunResult{Status: engine.StatusCompleted}, nil
}
func (w *waitingEngine) Run(ctx context.Context, h engine.Host, req *engine.RunRequest) (*engine.RunResult, error) {
	w.runs.Add(1)
	if _, err := h.CreateJob(ctx, &engine.JobRequest{RunID: req.RunID, StepID: "graph", Type: engine.JobGraph, Request: json.RawMessage(`{}`)}); err != nil {
		return nil, err
	}
	if w.block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return &engine.RunResult{Status: engine.StatusWaiting}, nil
}

// A callback that never comes: the job times out, the run is executed again (a new job carries the
// retry count), and after the last retry the run fails with WORKFLOW_TIMEOUT.
func TestJobTimeoutRetriesThenFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openStore(t)
	eng := &waitingEngine{}
	var logs testtool.Buffer
	s := newService(t, runs.Deps{Store: st, Manifests: testRegistry(t, graphManifest()), Plugins: fakePlugins{eng},
		Log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))},
		runs.Options{Policies: map[string]manifest.JobPolicy{
			engine.JobGraph: {MaxRetries: 2, Timeout: 100 * time.Millisecond, Exponential: true, Backoff: 10 * time.Millisecond}}})
	s.StartExecutor(ctx)
	s.StartSweeper(ctx)
	defer s.StopExecutor()
	defer s.StopSweeper()
	r, err := s.Start(ctx, runs.StartParams{Workflow: "g", User: newUser(t, st)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			t.Logf("log:\n%s", logs.String())
		}
	}()
	testtool.Within(10*time.Second, func() bool {
		cur, _ := st.GetRun(ctx, r.ID)
		return cur.Terminal()
	})
	if cur, _ := st.GetRun(ctx, r.ID); !cur.Terminal() {
		jobs, _ := st.ListRunJobs(ctx, r.ID)
		for _, j := range jobs {
			t.Logf("job %s %s retry %d/%d timeout %s", j.ID[:8], j.Status, j.RetryCount, j.MaxRetries, j.TimeoutAt)
		}
		t.Logf("run claimed by %q lease %v updated %s", cur.ClaimedBy, cur.LeaseUntil, cur.UpdatedAt)
	}
	got := waitStatus(t, st, r.ID, store.RunFailed, store.RunCompleted)
	var e engine.RunError
	_ = json.Unmarshal(got.Error, &e)
	if got.Status != store.RunFailed || e.Code != string(errcode.WorkflowTimeout) {
		t.Fatalf("run = %s %s, want failed WORKFLOW_TIMEOUT", got.Status, got.Error)
	}
	if n := eng.runs.Load(); n != 3 {
		t.Errorf("engine ran %d times, want 3 (1 + 2 retries)", n)
	}
	jobs, _ := st.ListRunJobs(ctx, r.ID)
	var counts []int
	for _, j := range jobs {
		if j.Status != engine.JobTimeout {
			t.Errorf("job %s is %s, want timeout", j.ID, j.Status)
		}
		counts = append(counts, j.RetryCount)
	}
	if len(counts) != 3 || counts[0] != 0 || counts[2] != 2 {
		t.Errorf("retry counts = %v, want [0 1 2]", counts)
	}
	// Each timed-out job ended once: job.failed for each, job.completed for none.
	evs, err := st.ClaimOutboxEvents(ctx, &store.ClaimOutboxParams{Limit: 1000, Token: uuid.NewString(), Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]int{}
	for _, e := range evs {
		byName[e.Event]++
	}
	if byName["job.failed"] != 3 || byName["job.completed"] != 0 || byName["job.status.changed"] != 6 {
		t.Errorf("job events of three timed-out jobs = %v, want 3 job.failed, 6 job.status.changed", byName)
	}
}

// Cancel reaches the engine's context, the engine's Cancel and the run's jobs.
func TestCancelReachesEngineAndJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openStore(t)
	eng := &waitingEngine{block: true}
	s := newService(t, runs.Deps{Store: st, Manifests: testRegistry(t, graphManifest()), Plugins: fakePlugins{eng}}, runs.Options{})
	s.StartExecutor(ctx)
	defer s.StopExecutor()
	p := newUser(t, st)
	r, err := s.Start(ctx, runs.StartParams{Workflow: "g", User: p})
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, st, r.ID, store.RunRunning)
	testtool.Eventually(t, time.Minute, "the run's job", func() bool {
		js, _ := st.ListRunJobs(ctx, r.ID)
		return len(js) > 0
	})
	if _, err := s.Cancel(ctx, p, r.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Cancel(ctx, p, r.ID); errcode.Of(err) != errcode.WorkflowInvalidState {
		t.Errorf("second cancel = %v, want WORKFLOW_INVALID_STATE", err)
	}
	eng.mu.Lock()
	cancelled := eng.cancelled
	eng.mu.Unlock()
	if len(cancelled) != 1 || cancelled[0] != r.ID {
		t.Errorf("engine Cancel calls = %v", cancelled)
	}
	jobs, _ := st.ListRunJobs(ctx, r.ID)
	if len(jobs) != 1 || jobs[0].Status != engine.JobFailed {
		t.Errorf("jobs after cancel = %+v", jobs)
	}
	if got := waitStatus(t, st, r.ID, store.RunCancelled); got.Status != store.RunCancelled {
		t.Errorf("run = %s", got.Status)
	}
}

// brokenEngine fails like a plugin whose process died.
type brokenEngine struct{ waitingEngine }

func (b *brokenEngine) Run(context.Context, engine.Host, *engine.RunRequest) (*engine.RunResult, error) {
	return nil, errcode.New(errcode.ExternalService, "engine plugin unavailable")
}

// A graph workflow runs on the in-process node engine when its plugin is down, and finishes there
// when the plugin dies mid-run; the trace says so.
func TestDegradation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, plugins := range map[string]runs.Engines{"down": fakePlugins{}, "dies": fakePlugins{&brokenEngine{}}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := openStore(t)
			s := newService(t, runs.Deps{Store: st, Manifests: testRegistry(t, graphManifest()), Plugins: plugins}, runs.Options{})
			s.StartExecutor(ctx)
			defer s.StopExecutor()
			r, err := s.Start(ctx, runs.StartParams{Workflow: "g", User: newUser(t, st)})
			if err != nil {
				t.Fatal(err)
			}
			got := waitStatus(t, st, r.ID, store.RunCompleted, store.RunFailed)
			if got.Status != store.RunCompleted || got.Engine != "node" || got.Degraded == "" {
				t.Fatalf("run = %s on %s (degraded %q) %s", got.Status, got.Engine, got.Degraded, got.Error)
			}
			steps, _ := st.ListTraceSteps(ctx, r.ID)
			var ts engine.TraceStep
			_ = json.Unmarshal(steps[0].Step, &ts)
			if ts.Engine != "node" || ts.Degraded == "" {
				t.Errorf("trace step = %+v, want engine node and a degraded reason", ts)
			}
		})
	}
}

// A workflow whose engine is disabled in the registry runs on the node engine although the plugin
// is up, and the trace names the engine entry that disabled it.
func TestDisabledEngineRunsOnFallback(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openStore(t)
	off, err := manifest.ParseEngine("engines/graph.yaml", []byte("name: graph\nenabled: false\n"))
	if err != nil {
		t.Fatal(err)
	}
	live := &waitingEngine{}
	s := newService(t, runs.Deps{Store: st, Manifests: manifest.NewRegistryWith([]*manifest.Engine{off}, graphManifest()),
		Plugins: fakePlugins{live}}, runs.Options{})
	s.StartExecutor(ctx)
	defer s.StopExecutor()
	r, err := s.Start(ctx, runs.StartParams{Workflow: "g", User: newUser(t, st)})
	if err != nil {
		t.Fatal(err)
	}
	got := waitStatus(t, st, r.ID, store.RunCompleted, store.RunFailed)
	const want = "engine graph is disabled (engines/graph.yaml: enabled: false)"
	if got.Status != store.RunCompleted || got.Engine != "node" || !strings.Contains(got.Degraded, want) || live.runs.Load() != 0 {
		t.Fatalf("run = %s on %s (degraded %q), plugin runs %d; want completed on node, %q, no plugin run",
			got.Status, got.Engine, got.Degraded, live.runs.Load(), want)
	}
	steps, _ := st.ListTraceSteps(ctx, r.ID)
	var ts engine.TraceStep
	_ = json.Unmarshal(steps[0].Step, &ts)
	if ts.Engine != "node" || !strings.Contains(ts.Degraded, want) {
		t.Errorf("trace step = %+v, want engine node and %q", ts, want)
	}
}

// A run that kept killing its hosts is failed with a clear error instead of looping.
func TestTooManyRecoveriesFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openStore(t)
	p := newUser(t, st)
	r := &store.Run{ID: uuid.NewString(), WorkflowID: "g", UserID: p.UserID, Inputs: json.RawMessage(`{}`), UserContext: json.RawMessage(`{}`)}
	if err := st.CreateRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		host := "dead-" + string(rune('a'+i))
		if _, err := st.ClaimRun(ctx, host, time.Millisecond); err != nil {
			t.Fatalf("claim %d: %v", i, err)
		}
		if i == 0 {
			if _, err := st.UpdateRun(ctx, r.ID, store.RunUpdate{From: []string{store.RunPending}, Status: store.RunRunning}); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(3 * time.Millisecond) // the subject: this claim's lease of 1 ms runs out by the clock
	}
	s := newService(t, runs.Deps{Store: st, Manifests: testRegistry(t, graphManifest())}, runs.Options{})
	s.StartExecutor(ctx)
	defer s.StopExecutor()
	got := waitStatus(t, st, r.ID, store.RunFailed, store.RunCompleted)
	if got.Status != store.RunFailed || got.Recoveries < 4 {
		t.Errorf("run = %s after %d recoveries (%s), want failed", got.Status, got.Recoveries, got.Error)
	}
}

// idleEngine waits for nothing: the run would stay running forever without the orphan sweep.
type idleEngine struct{ waitingEngine }

func (i *idleEngine) Run(context.Context, engine.Host, *engine.RunRequest) (*engine.RunResult, error) {
	i.runs.Add(1)
	return &engine.RunResult{Status: engine.StatusWaiting}, nil
}

func TestOrphanRunsEndFailed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openStore(t)
	eng := &idleEngine{}
	s := newService(t, runs.Deps{Store: st, Manifests: testRegistry(t, graphManifest()), Plugins: fakePlugins{eng}},
		runs.Options{OrphanAfter: 30 * time.Millisecond})
	s.StartExecutor(ctx)
	s.StartSweeper(ctx)
	defer s.StopExecutor()
	defer s.StopSweeper()
	r, err := s.Start(ctx, runs.StartParams{Workflow: "g", User: newUser(t, st)})
	if err != nil {
		t.Fatal(err)
	}
	got := waitStatus(t, st, r.ID, store.RunFailed, store.RunCompleted)
	if got.Status != store.RunFailed || eng.runs.Load() < 2 {
		t.Errorf("orphan run = %s after %d executions (%s)", got.Status, eng.runs.Load(), got.Error)
	}
}

// Starts by a free user at the same time pass the daily quota only as often as it allows; runs the
// scheduler starts for the user, and paid users' runs, are not refused.
func TestConcurrentStartsKeepTheQuota(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openStore(t)
	reg := registry(t)
	s := newService(t, runs.Deps{Store: st, Manifests: reg}, runs.Options{FreeRunsPerDay: 3})
	free, paid := newUser(t, st), newUser(t, st)
	free.Role = store.RoleFreeUser
	const n = 10
	errs := make([]error, n)
	storetest.Together(n, func(i int) {
		_, errs[i] = s.Start(ctx, runs.StartParams{Workflow: "graphic", Inputs: map[string]any{"topic": "tea"}, User: free})
	})
	started, refused := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			started++
		case errcode.Is(err, errcode.QuotaExceeded):
			refused++
		default:
			t.Fatalf("Start = %v, want a run or QUOTA_EXCEEDED", err)
		}
	}
	if started != 3 || refused != n-3 {
		t.Errorf("%d concurrent starts with a quota of 3: %d started, %d refused; want 3, %d", n, started, refused, n-3)
	}
	// Every run counts, whatever started it: a scheduler run over the quota is refused too, with
	// the seconds until the quota's day ends.
	_, err := s.Start(ctx, runs.StartParams{Workflow: "graphic", Inputs: map[string]any{"topic": "tea"}, User: free, Trigger: store.TriggerScheduler})
	if e := errcode.As(err); e == nil || e.Code != errcode.QuotaExceeded || e.RetryAfter < 1 || e.RetryAfter > 86400 {
		t.Errorf("scheduler Start over the quota = %v, want QUOTA_EXCEEDED with RetryAfter in 1..86400", err)
	}
	for range 4 {
		if _, err := s.Start(ctx, runs.StartParams{Workflow: "graphic", Inputs: map[string]any{"topic": "tea"}, User: paid}); err != nil {
			t.Fatalf("paid user Start = %v, want a run", err)
		}
	}
	gone := &auth.Principal{UserID: uuid.NewString(), Role: store.RoleFreeUser}
	if _, err := s.Start(ctx, runs.StartParams{Workflow: "graphic", Inputs: map[string]any{"topic": "tea"}, User: gone}); !errcode.Is(err, errcode.Authentication) {
		t.Errorf("Start by a user with no row = %v, want AUTHENTICATION_ERROR", err)
	}
}
