package scheduler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/auth"
	"github.com/reelforge/reelforge/host/launch"
	"github.com/reelforge/reelforge/host/scheduler"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/pgstore"
	"github.com/reelforge/reelforge/host/store/sqlitestore"
	"github.com/reelforge/reelforge/host/store/storetest"
	"github.com/reelforge/reelforge/internal/testtool"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// fakeClock is an injected clock tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// fakeRunner records the runs it is asked to start.
type fakeRunner struct {
	mu      sync.Mutex
	started []launch.Params
	ids     []string
	delay   time.Duration
	err     error
}

func (r *fakeRunner) Start(_ context.Context, p launch.Params) (string, error) {
	time.Sleep(r.delay) // the behaviour under test: a runner slow to start (no wait on a condition)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return "", r.err
	}
	id := uuid.NewString()
	r.started = append(r.started, p)
	r.ids = append(r.ids, id)
	return id, nil
}

func (*fakeRunner) Check(context.Context, string, map[string]any) error { return nil }

func (r *fakeRunner) Cancel(context.Context, string) error { return nil }

func (r *fakeRunner) count() int { r.mu.Lock(); defer r.mu.Unlock(); return len(r.started) }

type bundle struct {
	st     store.Driver
	clock  *fakeClock
	runner *fakeRunner
	sched  *scheduler.Scheduler
	user   *store.User
}

var day0 = time.Date(2026, 3, 10, 9, 0, 0, 0, time.UTC)

func openSQLite(t *testing.T, clock *fakeClock) store.Driver {
	t.Helper()
	d, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "s.db"), sqlitestore.Options{Clock: clock.Now})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func setup(t *testing.T) *bundle {
	t.Helper()
	clock := &fakeClock{now: day0}
	st := openSQLite(t, clock)
	b := &bundle{st: st, clock: clock, runner: &fakeRunner{}}
	b.sched = scheduler.New(st, scheduler.Options{Runner: b.runner, Clock: clock.Now, LockName: "t-" + uuid.NewString()})
	b.user = storetest.NewUser(t, st, store.RoleUser)
	return b
}

// project makes a project whose blueprint holds n tasks due on date.
func (b *bundle) project(t *testing.T, n int, date string) *store.Project {
	t.Helper()
	p := storetest.NewProject(t, b.st, b.user.ID)
	var tasks []map[string]any
	for i := range n {
		tasks = append(tasks, map[string]any{"id": fmt.Sprintf("t%d", i), "date": date, "workflow_id": "video",
			"summary": fmt.Sprintf("task %d", i), "platform": "douyin", "priority": "medium"})
	}
	bp, _ := json.Marshal(map[string]any{"tasks": tasks})
	if err := scheduler.SyncBlueprint(context.Background(), b.st, p.ID, bp); err != nil {
		t.Fatalf("SyncBlueprint: %v", err)
	}
	return p
}

func (b *bundle) finishAll(t *testing.T, status string) {
	t.Helper()
	b.runner.mu.Lock()
	started, ids := append([]launch.Params(nil), b.runner.started...), append([]string(nil), b.runner.ids...)
	b.runner.mu.Unlock()
	for i, p := range started {
		pc, _ := json.Marshal(map[string]any{"project_id": p.ProjectID, "strategy_task_id": p.StrategyTaskID})
		b.sched.RunEnded(context.Background(), launch.Ended{RunID: ids[i], ProjectID: p.ProjectID, Status: status,
			ProjectContext: pc, Trace: json.RawMessage(`[{"step_id":"write_script","status":"completed"}]`)})
	}
}

func TestTickLimitsAndCatchUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	for range 12 {
		b.project(t, 3, "2026-03-10")
	}
	b.project(t, 2, "2026-03-20") // not due yet
	rep, err := b.sched.TickNow(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Projects != 10 || len(rep.Started) != 20 {
		t.Fatalf("first tick = %d projects, %d runs; want 10 projects, 20 runs", rep.Projects, len(rep.Started))
	}
	perProject := map[string]int{}
	for _, p := range b.runner.started {
		perProject[p.ProjectID]++
		if p.Trigger != store.TriggerScheduler || p.User == nil || p.User.UserID != b.user.ID || p.Inputs["summary"] == "" {
			t.Errorf("started %+v, want a scheduler run as the owner with the task's summary", p)
		}
	}
	for pid, n := range perProject {
		if n > scheduler.MaxRunsPerProject {
			t.Errorf("project %s got %d runs in one tick, want at most %d", pid, n, scheduler.MaxRunsPerProject)
		}
	}
	// Runs still going: their projects are full, the two left-over projects get theirs.
	rep, _ = b.sched.TickNow(ctx)
	if rep.Projects != 2 || len(rep.Started) != 4 {
		t.Errorf("second tick (runs still going) = %d projects, %d runs; want 2, 4", rep.Projects, len(rep.Started))
	}
	// The runs end; the third task of every project is still due and is caught up.
	b.finishAll(t, "completed")
	rep, _ = b.sched.TickNow(ctx)
	if len(rep.Started) != 10 {
		t.Errorf("tick after the runs ended started %d runs, want 10 (third task of 10 projects)", len(rep.Started))
	}
	// A missed tick: days later the future task is due and still triggered once.
	b.finishAll(t, "completed")
	b.clock.Add(14 * 24 * time.Hour)
	rep, _ = b.sched.TickNow(ctx)
	b.finishAll(t, "completed")
	rep2, _ := b.sched.TickNow(ctx)
	total := len(rep.Started) + len(rep2.Started)
	if total != 4 { // 2 left-over third tasks + 2 future tasks
		t.Errorf("catch-up ticks started %d runs, want 4", total)
	}
	b.finishAll(t, "completed")
	if rep, _ := b.sched.TickNow(ctx); len(rep.Started) != 0 {
		t.Errorf("tick with nothing due started %d runs", len(rep.Started))
	}
	if n, want := b.runner.count(), 12*3+2; n != want {
		t.Errorf("runs started overall = %d, want %d (each task once)", n, want)
	}
}

func TestDoubleTriggerStartsOneRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	b.runner.delay = 20 * time.Millisecond
	p := b.project(t, 1, "2026-03-10")
	user := &auth.Principal{UserID: b.user.ID, Role: b.user.Role}
	var wg sync.WaitGroup
	var ok, conflict atomic.Int32
	for range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := b.sched.Trigger(ctx, scheduler.TriggerParams{WorkflowID: "video", ProjectID: p.ID, StrategyTaskID: "t0", User: user})
			switch {
			case err == nil:
				ok.Add(1)
			case errcode.Is(err, errcode.WorkflowAlreadyRunning):
				conflict.Add(1)
			default:
				t.Errorf("Trigger = %v", err)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 1 || conflict.Load() != 4 || b.runner.count() != 1 {
		t.Fatalf("5 triggers: %d started, %d refused, %d runs; want 1, 4, 1", ok.Load(), conflict.Load(), b.runner.count())
	}
	a, err := b.st.GetAutoRun(ctx, p.ID, "t0")
	if err != nil || a.Status != store.AutoRunRunning || a.RunID != b.runner.ids[0] {
		t.Fatalf("auto run = %+v, %v; want running with the run id", a, err)
	}
	if tasks, _ := b.sched.PendingTasks(ctx, user, 10); len(tasks) != 0 {
		t.Errorf("pending tasks while running = %+v, want none", tasks)
	}
	b.finishAll(t, "completed")
	a, _ = b.st.GetAutoRun(ctx, p.ID, "t0")
	if a.Status != store.AutoRunCompleted || len(a.Trace) == 0 {
		t.Errorf("auto run after the run = %+v, want completed with the trace", a)
	}
	// A trigger acting on a list fetched before the task ran does not run it again.
	if _, err := b.sched.Trigger(ctx, scheduler.TriggerParams{WorkflowID: "video", ProjectID: p.ID, StrategyTaskID: "t0", User: user}); !errcode.Is(err, errcode.WorkflowInvalidState) || b.runner.count() != 1 {
		t.Errorf("Trigger(completed task) = %v with %d runs, want WORKFLOW_INVALID_STATE and 1", err, b.runner.count())
	}
	// Unknown workflow and ad-hoc ids.
	if _, err := b.sched.Trigger(ctx, scheduler.TriggerParams{WorkflowID: "nope", ProjectID: p.ID, User: user}); !errcode.Is(err, errcode.WorkflowNotFound) {
		t.Errorf("Trigger(unknown workflow) = %v, want WORKFLOW_NOT_FOUND", err)
	}
	res, err := b.sched.Trigger(ctx, scheduler.TriggerParams{WorkflowID: "music", ProjectID: p.ID, User: user})
	if err != nil || res.Status != "running" || len(res.StrategyTaskID) < 6 || res.StrategyTaskID[:6] != "adhoc-" {
		t.Errorf("ad-hoc Trigger = %+v, %v", res, err)
	}
}

func TestFailedRunLeavesTaskDue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	p := b.project(t, 1, "2026-03-01")
	if rep, _ := b.sched.TickNow(ctx); len(rep.Started) != 1 {
		t.Fatalf("tick started %d, want 1", len(rep.Started))
	}
	b.finishAll(t, "failed")
	a, _ := b.st.GetAutoRun(ctx, p.ID, "t0")
	if a.Status != store.AutoRunFailed {
		t.Errorf("auto run = %q, want failed", a.Status)
	}
	user := &auth.Principal{UserID: b.user.ID}
	got, _ := b.sched.PendingTasks(ctx, user, 10)
	if len(got) != 1 || got[0].StrategyTaskID != "t0" || got[0].TaskDueDate != "2026-03-01" || got[0].Inputs["platform"] != "douyin" {
		t.Errorf("pending after a failed run = %+v, want t0 due again", got)
	}
	// A start error releases the mark.
	b.runner.err = errcode.New(errcode.QuotaExceeded, "")
	if _, err := b.sched.Trigger(ctx, scheduler.TriggerParams{WorkflowID: "video", ProjectID: p.ID, StrategyTaskID: "t0", User: user}); !errcode.Is(err, errcode.QuotaExceeded) {
		t.Errorf("Trigger with a refusing runner = %v, want QUOTA_EXCEEDED", err)
	}
	if a, _ := b.st.GetAutoRun(ctx, p.ID, "t0"); a.Status != store.AutoRunFailed {
		t.Errorf("auto run after a start error = %q, want failed", a.Status)
	}
}

func TestFallbackSwitchesByItself(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	b.project(t, 1, "2026-03-10")
	interval := 15 * time.Minute
	tool := &auth.Principal{Scope: store.ScopeAutomation, KeyID: "k1", KeyName: "n8n"}
	owner := &auth.Principal{UserID: b.user.ID, Role: store.RoleFreeUser}
	steps := []struct {
		name     string
		advance  time.Duration
		caller   *auth.Principal // calls pending-tasks
		fallback bool
		ticked   bool
	}{
		{"just started", 0, nil, false, false},
		{"one interval of silence", interval, nil, false, false},
		{"two intervals of silence", interval, nil, true, true},
		{"an ordinary user calls", time.Minute, owner, true, true},
		{"the tool returns", time.Minute, tool, false, false},
		{"one interval after the call", interval, nil, false, false},
		{"two intervals after the call", interval + time.Minute, nil, true, true},
	}
	for _, s := range steps {
		b.clock.Add(s.advance)
		if s.caller != nil {
			if _, err := b.sched.PendingTasks(ctx, s.caller, 10); err != nil {
				t.Fatal(err)
			}
		}
		_, ticked, err := b.sched.Periodic(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := b.sched.FallbackActive(); got != s.fallback || ticked != s.ticked {
			t.Errorf("%s: fallback %v, ticked %v; want %v, %v", s.name, got, ticked, s.fallback, s.ticked)
		}
		if st := b.sched.Status(ctx, automation); st.FallbackActive != s.fallback {
			t.Errorf("%s: status fallback_active %v, want %v", s.name, st.FallbackActive, s.fallback)
		}
	}
	if b.runner.count() != 1 {
		t.Errorf("fallback ticks started %d runs, want 1 (the one due task)", b.runner.count())
	}
	if st := b.sched.Status(ctx, automation); st.LastAutomationCall == nil || st.IntervalMS != 900000 || st.IntervalMinutes != 15 ||
		st.MaxProjectsPerTick != 10 || st.MaxRunsPerProject != 2 || st.Mode != scheduler.ModeAutomation {
		t.Errorf("Status = %+v", st)
	}
}

func TestCronModeTicksEveryPeriod(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := &fakeClock{now: day0}
	st := openSQLite(t, clock)
	s := scheduler.New(st, scheduler.Options{Mode: scheduler.ModeCron, Runner: &fakeRunner{}, Clock: clock.Now})
	if _, ticked, err := s.Periodic(ctx); err != nil || !ticked {
		t.Errorf("Periodic in cron mode = %v, %v; want a tick", ticked, err)
	}
	if s.FallbackActive() {
		t.Error("cron mode reports a fallback")
	}
}

func TestServeRunsTheTimer(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{now: day0}
	st := openSQLite(t, clock)
	r := &fakeRunner{}
	s := scheduler.New(st, scheduler.Options{Mode: scheduler.ModeCron, Interval: time.Second, Runner: r, Clock: clock.Now})
	u := storetest.NewUser(t, st, "")
	p := storetest.NewProject(t, st, u.ID)
	if err := scheduler.SyncBlueprint(context.Background(), st, p.ID, json.RawMessage(`{"tasks":[{"id":"a","date":"2026-03-01"}]}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.Serve(t.Context()); err != nil {
		t.Fatal(err)
	}
	testtool.Eventually(t, 5*time.Second, "the cron timer to start a run", func() bool { return r.count() > 0 })
	s.Shutdown()
	if r.count() != 1 {
		t.Errorf("the cron timer started %d runs, want 1", r.count())
	}
}

func TestTwoSchedulersOnePostgresTickOnce(t *testing.T) {
	t.Parallel()
	url := storetest.PostgresURL(t)
	ctx := context.Background()
	schema := storetest.SchemaName()
	clock := &fakeClock{now: day0}
	open := func() store.Driver {
		d, err := pgstore.Open(ctx, url, pgstore.Options{Schema: schema, Clock: clock.Now})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { d.Close() })
		return d
	}
	a, b := open(), open()
	t.Cleanup(func() {
		storetest.DropSchema(url, schema)
	})
	u := storetest.NewUser(t, a, "")
	for range 3 {
		p := storetest.NewProject(t, a, u.ID)
		if err := scheduler.SyncBlueprint(ctx, a, p.ID, json.RawMessage(`{"tasks":[{"id":"x","date":"2026-03-01"},{"id":"y","date":"2026-03-02"}]}`)); err != nil {
			t.Fatal(err)
		}
	}
	r := &fakeRunner{}
	lock := "two-" + schema
	s1 := scheduler.New(a, scheduler.Options{Mode: scheduler.ModeCron, Runner: r, Clock: clock.Now, LockName: lock})
	s2 := scheduler.New(b, scheduler.Options{Mode: scheduler.ModeCron, Runner: r, Clock: clock.Now, LockName: lock})
	t.Cleanup(s1.Shutdown)
	t.Cleanup(s2.Shutdown)
	var wg sync.WaitGroup
	var ticks atomic.Int32
	for _, s := range []*scheduler.Scheduler{s1, s2, s1, s2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, ticked, err := s.Periodic(ctx)
			if err != nil {
				t.Errorf("Periodic: %v", err)
			}
			if ticked {
				ticks.Add(1)
			}
		}()
	}
	wg.Wait()
	if s1.Leader(ctx) == s2.Leader(ctx) {
		t.Errorf("leaders: s1 %v, s2 %v; want exactly one", s1.Leader(ctx), s2.Leader(ctx))
	}
	if r.count() != 6 {
		t.Errorf("two schedulers started %d runs, want 6 (each due task once)", r.count())
	}
	// The leader goes away: the other takes over.
	leader, other := s1, s2
	if s2.Leader(ctx) {
		leader, other = s2, s1
	}
	leader.Shutdown()
	if !other.Leader(ctx) {
		t.Error("the other scheduler did not take the lock over after the leader stopped")
	}
}

func TestParseBlueprint(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 10, 15, 0, 0, 0, time.UTC)
	tests := map[string]struct {
		in   string
		want []string // id@date/workflow/priority
	}{
		"tasks": {`{"tasks":[{"id":"a","date":"2026-03-11","workflow_id":"music","priority":"HIGH"},{"date":"2026-03-12T08:00:00Z"}]}`,
			[]string{"a@2026-03-11/music/high", "2026-03-12-2@2026-03-12/video/medium"}},
		"days with tasks": {`{"start_date":"2026-04-01","days":[{"day":1,"tasks":[{"id":"x","workflow":"graphic"}]},{"tasks":[{"id":"x"}]}]}`,
			[]string{"x@2026-04-01/graphic/medium", "x-2@2026-04-02/video/medium"}},
		"repeated ids": {`{"tasks":[{"id":"a-2","date":"2026-03-11"},{"id":"a","date":"2026-03-11"},{"id":"a","date":"2026-03-11"},{"id":"a","date":"2026-03-11"}]}`,
			[]string{"a-2@2026-03-11/video/medium", "a@2026-03-11/video/medium", "a-3@2026-03-11/video/medium", "a-4@2026-03-11/video/medium"}},
		"days as tasks": {`{"days":[{"day":3,"id":7,"summary":"s","priority":"low"}]}`, []string{"7@2026-03-12/video/low"}},
		"undated":       {`{"tasks":[{"id":"a"}]}`, nil},
		"null":          {`null`, nil},
		"not an object": {`[1,2]`, nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var got []string
			for _, st := range scheduler.ParseBlueprint(json.RawMessage(tc.in), now) {
				got = append(got, st.TaskID+"@"+st.DueDate+"/"+st.WorkflowID+"/"+st.Priority)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseBlueprint(%s) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

// TestTickSkipsOverQuota: a due task whose owner is over the daily quota is not started by the
// timer: the tick lists it in skipped with the reason (and so the status does), emits one
// scheduler.task.skipped event of the owner however often it is skipped that day, and leaves the
// task due.
// automation is the automation tool's principal (an automation-scope key).
var automation = &auth.Principal{Scope: store.ScopeAutomation, KeyID: "k", KeyName: "n8n"}

func TestTickSkipsOverQuota(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	p := b.project(t, 1, "2026-03-10")
	over := errcode.New(errcode.QuotaExceeded, "Free users may start 20 runs a day")
	over.RetryAfter = 3600
	b.runner.err = over
	for range 2 {
		rep, err := b.sched.TickNow(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := []scheduler.Skip{{ProjectID: p.ID, StrategyTaskID: "t0", WorkflowID: "video", UserID: b.user.ID,
			Code: "QUOTA_EXCEEDED", Reason: "Free users may start 20 runs a day", RetryAfter: 3600}}
		if diff := cmp.Diff(want, rep.Skipped); diff != "" || len(rep.Started) != 0 || rep.Failed != 0 {
			t.Errorf("tick over quota: skipped (-want +got):\n%s started %v failed %d", diff, rep.Started, rep.Failed)
		}
	}
	// The owner, an admin and the automation tool see the skipped task; another user sees nothing
	// of it (issue 37: the status showed every user's skipped tasks and run ids to anyone).
	viewers := map[string]struct {
		caller *auth.Principal
		want   int
	}{
		"owner":      {&auth.Principal{UserID: b.user.ID, Role: store.RoleFreeUser}, 1},
		"admin":      {&auth.Principal{UserID: uuid.NewString(), Role: store.RoleAdmin}, 1},
		"automation": {automation, 1},
		"other user": {&auth.Principal{UserID: uuid.NewString(), Role: store.RoleUser}, 0},
	}
	for name, v := range viewers {
		st := b.sched.Status(ctx, v.caller)
		if st.LastTick == nil || len(st.LastTick.Skipped) != v.want || (v.want == 1 && st.LastTick.Skipped[0].Code != "QUOTA_EXCEEDED") {
			t.Errorf("%s: Status().LastTick = %+v, want %d skipped task(s)", name, st.LastTick, v.want)
		} else if v.want == 0 && (st.LastTick.Due != 0 || len(st.LastTick.Started) != 0) {
			t.Errorf("%s: Status().LastTick = %+v, want nothing of another user's tick", name, st.LastTick)
		}
	}
	evs, err := b.st.ClaimOutboxEvents(ctx, &store.ClaimOutboxParams{Limit: 10, Token: uuid.NewString(), Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Event != "scheduler.task.skipped" || evs[0].UserID != b.user.ID || evs[0].ProjectID != p.ID {
		t.Errorf("outbox after two skipping ticks = %d events (%+v), want one scheduler.task.skipped of the owner", len(evs), evs)
	}
	b.runner.err = nil
	if rep, err := b.sched.TickNow(ctx); err != nil || len(rep.Started) != 1 {
		t.Errorf("tick once the quota allows = %+v, %v; want the task started", rep, err)
	}
}
