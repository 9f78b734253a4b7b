package tasks_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/auth"
	"github.com/reelforge/reelforge/host/events"
	"github.com/reelforge/reelforge/host/launch"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/sqlitestore"
	"github.com/reelforge/reelforge/host/store/storetest"
	"github.com/reelforge/reelforge/host/tasks"
	"github.com/reelforge/reelforge/internal/testtool"
	"github.com/reelforge/reelforge/sdk/errcode"
)

type fakeRunner struct {
	mu        sync.Mutex
	started   []launch.Params
	ids       []string
	cancelled []string
	err       error
}

func (r *fakeRunner) Start(_ context.Context, p launch.Params) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return "", r.err
	}
	id := uuid.NewString()
	r.started, r.ids = append(r.started, p), append(r.ids, id)
	return id, nil
}

func (*fakeRunner) Check(context.Context, string, map[string]any) error { return nil }

func (r *fakeRunner) Cancel(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cancelled = append(r.cancelled, id)
	return nil
}

type frames struct {
	mu  sync.Mutex
	got []string
}

func (f *frames) Notify(_ context.Context, fr events.Frame) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, fr.Type+" "+fr.Data["status"].(string))
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

type bundle struct {
	st     store.Driver
	clock  *clock
	runner *fakeRunner
	frames *frames
	svc    *tasks.Service
	user   *auth.Principal
	pid    string
}

func setup(t *testing.T) *bundle {
	t.Helper()
	c := &clock{now: time.Date(2026, 3, 10, 9, 0, 0, 0, time.UTC)}
	st, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "t.db"), sqlitestore.Options{Clock: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	b := &bundle{st: st, clock: c, runner: &fakeRunner{}, frames: &frames{}}
	b.svc = tasks.New(st, tasks.Options{Runner: b.runner, Notifier: b.frames})
	u := storetest.NewUser(t, st, store.RoleUser)
	b.user = &auth.Principal{UserID: u.ID, Role: u.Role}
	b.pid = storetest.NewProject(t, st, u.ID).ID
	return b
}

func (b *bundle) create(t *testing.T, typ string) *store.Task {
	t.Helper()
	task, err := b.svc.Create(context.Background(), tasks.CreateParams{User: b.user, ProjectID: b.pid, Type: typ,
		InputParams: json.RawMessage(`{"prompt":"sunrise"}`)})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	return task
}

func (b *bundle) status(t *testing.T, id string) *store.Task {
	t.Helper()
	task, err := b.st.GetTask(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return task
}

func (b *bundle) end(id, runID, status string, outputs, errJSON string) {
	e := launch.Ended{RunID: runID, Status: status, TriggeredBy: "task:" + id}
	if outputs != "" {
		e.Outputs = json.RawMessage(outputs)
	}
	if errJSON != "" {
		e.Error = json.RawMessage(errJSON)
	}
	b.svc.RunEnded(context.Background(), e)
}

func TestTaskSucceeds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	task := b.create(t, "video")
	if task.Status != store.TaskPending {
		t.Fatalf("created task = %q, want pending", task.Status)
	}
	if err := b.svc.Step(ctx); err != nil {
		t.Fatal(err)
	}
	got := b.status(t, task.ID)
	if got.Status != store.TaskRunning || got.RunID == "" || len(b.runner.started) != 1 {
		t.Fatalf("after a worker pass: %q run %q, %d runs; want running with one run", got.Status, got.RunID, len(b.runner.started))
	}
	if p := b.runner.started[0]; p.Workflow != "video" || p.Inputs["prompt"] != "sunrise" || p.ProjectID != b.pid || p.User.UserID != b.user.UserID {
		t.Errorf("started %+v", p)
	}
	if err := b.svc.Dispatch(ctx, task.ID); !errcode.Is(err, errcode.WorkflowAlreadyRunning) {
		t.Errorf("second dispatch of a running task = %v, want WORKFLOW_ALREADY_RUNNING", err)
	}
	b.end(task.ID, got.RunID, "completed", `{"video_url":"https://cdn.example/v.mp4","script":"Hello there","cover_url":"https://cdn.example/c.jpg","nested":{"audio":["/data/a.mp3"]}}`, "")
	got = b.status(t, task.ID)
	if got.Status != store.TaskSuccess || got.CompletedAt == nil || len(got.OutputData) == 0 {
		t.Fatalf("after the run: %+v, want success with output_data", got)
	}
	if diff := cmp.Diff([]string{"task:status pending", "task:status queued", "task:status running", "task:status success"}, b.frames.got); diff != "" {
		t.Errorf("frames (-want +got):\n%s", diff)
	}
}

func TestTaskRetriesWithBackoff(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	task := b.create(t, "music")
	for i, wantDelay := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		if err := b.svc.Step(ctx); err != nil {
			t.Fatal(err)
		}
		run := b.status(t, task.ID)
		if run.Status != store.TaskRunning {
			t.Fatalf("attempt %d: %q, want running", i+1, run.Status)
		}
		b.end(task.ID, run.RunID, "failed", "", `{"code":"WORKFLOW_TIMEOUT","message":"job timed out"}`)
		got := b.status(t, task.ID)
		if got.Status != store.TaskQueued || got.RetryCount != i+1 || got.NextAttemptAt == nil || !got.NextAttemptAt.Equal(b.clock.Now().Add(wantDelay)) {
			t.Fatalf("after failure %d: %q retry %d next %v; want queued, %d, now+%v", i+1, got.Status, got.RetryCount, got.NextAttemptAt, i+1, wantDelay)
		}
		_ = b.svc.Step(ctx) // the back-off holds it
		if got := b.status(t, task.ID); got.Status != store.TaskQueued {
			t.Fatalf("during the back-off: %q, want queued", got.Status)
		}
		b.clock.Add(wantDelay)
	}
	_ = b.svc.Step(ctx)
	run := b.status(t, task.ID)
	b.end(task.ID, run.RunID, "failed", "", `{"code":"WORKFLOW_TIMEOUT","message":"job timed out"}`)
	if got := b.status(t, task.ID); got.Status != store.TaskFailed || got.RetryCount != 3 {
		t.Errorf("after retries ran out: %q retry %d, want failed, 3", got.Status, got.RetryCount)
	}
	if n := len(b.runner.started); n != 4 {
		t.Errorf("runs = %d, want 4 (1 + 3 retries)", n)
	}
}

func TestBusinessErrorFailsAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	task := b.create(t, "graphic")
	_ = b.svc.Step(ctx)
	run := b.status(t, task.ID)
	b.end(task.ID, run.RunID, "failed", "", `{"code":"WORKFLOW_STEP_FAILED","message":"content violation"}`)
	if got := b.status(t, task.ID); got.Status != store.TaskFailed || got.RetryCount != 0 || got.ErrorMessage == "" {
		t.Errorf("after a business error: %+v, want failed without retry", got)
	}
	// A start that is refused fails the task too.
	b.runner.err = errcode.New(errcode.Validation, "bad inputs")
	task2 := b.create(t, "voiceover")
	_ = b.svc.Step(ctx)
	if got := b.status(t, task2.ID); got.Status != store.TaskFailed {
		t.Errorf("after a refused start: %q, want failed", got.Status)
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	pending := b.create(t, "video")
	if got, err := b.svc.Cancel(ctx, b.user, pending.ID); err != nil || got.Status != store.TaskCancelled {
		t.Fatalf("Cancel(pending) = %+v, %v", got, err)
	}
	if _, err := b.svc.Cancel(ctx, b.user, pending.ID); !errcode.Is(err, errcode.WorkflowInvalidState) {
		t.Errorf("Cancel(cancelled) = %v, want WORKFLOW_INVALID_STATE", err)
	}
	running := b.create(t, "video")
	_ = b.svc.Step(ctx)
	run := b.status(t, running.ID)
	if _, err := b.svc.Cancel(ctx, b.user, running.ID); err != nil {
		t.Fatalf("Cancel(running) = %v", err)
	}
	if diff := cmp.Diff([]string{run.RunID}, b.runner.cancelled); diff != "" {
		t.Errorf("cancelled runs (-want +got):\n%s", diff)
	}
	// The cancelled run ending does not revive the task.
	b.end(running.ID, run.RunID, "cancelled", "", "")
	if got := b.status(t, running.ID); got.Status != store.TaskCancelled {
		t.Errorf("after the run ended: %q, want cancelled", got.Status)
	}
	other := &auth.Principal{UserID: uuid.NewString(), Role: store.RoleUser}
	for name, id := range map[string]string{"unknown": uuid.NewString(), "another user's": running.ID} {
		if _, err := b.svc.Cancel(ctx, other, id); !errcode.Is(err, errcode.NotFound) {
			t.Errorf("Cancel(%s) = %v, want NOT_FOUND", name, err)
		}
	}
}

func TestWorkerRunsInBackground(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if err := b.svc.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer b.svc.Stop()
	task := b.create(t, "video")
	testtool.Within(5*time.Second, func() bool { return b.status(t, task.ID).Status == store.TaskRunning })
	if got := b.status(t, task.ID); got.Status != store.TaskRunning {
		t.Errorf("the worker left the task %q, want running", got.Status)
	}
}

func TestWorkflowFor(t *testing.T) {
	t.Parallel()
	svc := tasks.New(nil, tasks.Options{Known: func(id string) bool { return id == "live" }})
	for in, want := range map[string]string{"video": "video", "voiceover": "voiceover", "music": "music", "graphic": "graphic",
		"live": "live", "shoot": "", "nonsense": ""} {
		if got := svc.WorkflowFor(in); got != want {
			t.Errorf("WorkflowFor(%q) = %q, want %q", in, got, want)
		}
	}
}
