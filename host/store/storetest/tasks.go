package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/store"
)

func testTasks(t *testing.T, open Opener) {
	ctx := context.Background()
	d := open(t)
	u := NewUser(t, d, "")
	p := NewProject(t, d, u.ID)
	task := &store.Task{ID: uuid.NewString(), ProjectID: p.ID, UserID: u.ID, Type: "video", InputParams: json.RawMessage(`{"prompt":"x"}`)}
	if err := d.CreateTask(ctx, task); err != nil {
		t.Fatalf("CreateTask: %v", err)
	}
	got, err := d.GetTask(ctx, task.ID)
	if err != nil || got.Status != store.TaskPending || got.MaxRetries != 3 || string(got.InputParams) == "" {
		t.Fatalf("GetTask = %+v, %v; want pending with max_retries 3", got, err)
	}
	if _, err := d.GetTask(ctx, uuid.NewString()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetTask(unknown) = %v, want ErrNotFound", err)
	}

	// Two workers claim at once: each task is moved once.
	var wg sync.WaitGroup
	claimed := make([][]store.Task, 4)
	for i := range claimed {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := d.ClaimTasks(ctx, store.ClaimTasksParams{From: store.TaskPending, To: store.TaskQueued, Limit: 5})
			if err != nil {
				t.Errorf("ClaimTasks: %v", err)
			}
			claimed[i] = c
		}()
	}
	wg.Wait()
	n := 0
	for _, c := range claimed {
		n += len(c)
	}
	if n != 1 {
		t.Fatalf("concurrent ClaimTasks moved the task %d times, want 1", n)
	}
	// queued -> running refuses a second dispatch.
	run := "run-1"
	if _, err := d.UpdateTask(ctx, store.TaskUpdate{ID: task.ID, From: []string{store.TaskQueued}, To: store.TaskRunning, RunID: &run}); err != nil {
		t.Fatalf("queued -> running: %v", err)
	}
	if _, err := d.UpdateTask(ctx, store.TaskUpdate{ID: task.ID, From: []string{store.TaskQueued}, To: store.TaskRunning}); !errors.Is(err, store.ErrStale) {
		t.Errorf("second dispatch = %v, want ErrStale", err)
	}
	// retry: back to queued with retry_count + 1 and a back-off.
	next := d.Now().Add(3600e9)
	got, err = d.UpdateTask(ctx, store.TaskUpdate{ID: task.ID, From: []string{store.TaskRunning}, To: store.TaskQueued, IncRetry: true, NextAttemptAt: &next})
	if err != nil || got.RetryCount != 1 || got.NextAttemptAt == nil || !got.NextAttemptAt.Equal(next) {
		t.Fatalf("retry = %+v, %v; want retry_count 1 and next_attempt_at %v", got, err, next)
	}
	if c, _ := d.ClaimTasks(ctx, store.ClaimTasksParams{From: store.TaskQueued, To: store.TaskRunning, Limit: 5}); len(c) != 0 {
		t.Errorf("ClaimTasks took a task before its back-off: %+v", c)
	}
	past := d.Now().Add(-1e9)
	if _, err := d.UpdateTask(ctx, store.TaskUpdate{ID: task.ID, From: []string{store.TaskQueued}, To: store.TaskQueued, NextAttemptAt: &past}); err != nil {
		t.Fatal(err)
	}
	if c, _ := d.ClaimTasks(ctx, store.ClaimTasksParams{From: store.TaskQueued, To: store.TaskRunning, Limit: 5}); len(c) != 1 {
		t.Fatalf("ClaimTasks after the back-off = %d tasks, want 1", len(c))
	}
	// A task left running without a run by a dead host is taken back only once stale.
	orphan := &store.Task{ID: uuid.NewString(), ProjectID: p.ID, UserID: u.ID, Type: "music", Status: store.TaskRunning}
	if err := d.CreateTask(ctx, orphan); err != nil {
		t.Fatal(err)
	}
	if c, _ := d.ClaimTasks(ctx, store.ClaimTasksParams{From: store.TaskRunning, To: store.TaskQueued, StaleBefore: d.Now().Add(-time.Minute)}); len(c) != 0 {
		t.Errorf("ClaimTasks(stale) took a fresh task: %+v", c)
	}
	if c, _ := d.ClaimTasks(ctx, store.ClaimTasksParams{From: store.TaskRunning, To: store.TaskQueued, StaleBefore: d.Now().Add(time.Minute)}); len(c) != 1 || c[0].ID != orphan.ID {
		t.Errorf("ClaimTasks(stale) = %+v, want the orphan only (not the task with a run)", c)
	}
	// success with assets in one step.
	asset := store.Asset{ID: uuid.NewString(), UserID: u.ID, ProjectID: p.ID, FilePath: "https://x/v.mp4", FileURL: "https://x/v.mp4", FileType: "video", SourceTaskID: task.ID}
	got, err = d.UpdateTask(ctx, store.TaskUpdate{ID: task.ID, From: []string{store.TaskRunning}, To: store.TaskSuccess,
		OutputData: json.RawMessage(`{"video_url":"https://x/v.mp4"}`), Completed: true, Assets: []store.Asset{asset}})
	if err != nil || got.Status != store.TaskSuccess || got.CompletedAt == nil {
		t.Fatalf("success = %+v, %v", got, err)
	}
	as, err := d.ListTaskAssets(ctx, task.ID)
	if err != nil || len(as) != 1 || as[0].FileType != "video" {
		t.Errorf("ListTaskAssets = %+v, %v; want one video", as, err)
	}
	if _, err := d.UpdateTask(ctx, store.TaskUpdate{ID: task.ID, From: []string{store.TaskPending, store.TaskQueued, store.TaskRunning}, To: store.TaskCancelled}); !errors.Is(err, store.ErrStale) {
		t.Errorf("cancel of a finished task = %v, want ErrStale", err)
	}
	if _, err := d.UpdateTask(ctx, store.TaskUpdate{ID: uuid.NewString(), From: []string{store.TaskPending}, To: store.TaskCancelled}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("UpdateTask(unknown) = %v, want ErrNotFound", err)
	}
	list, err := d.ListProjectTasks(ctx, p.ID)
	if err != nil || len(list) != 2 {
		t.Errorf("ListProjectTasks = %+v, %v", list, err)
	}
}

// Several hosts run the task worker's claims at once (every host runs the worker, not only the
// leader). A claim must move a task only while it still qualifies when the row is written.
const (
	claimHosts    = 6
	claimRounds   = 20
	claimPerRound = 20
)

// claimRace holds one project's tasks and the hosts' concurrent claims over them.
type claimRace struct {
	t  *testing.T
	d  store.Driver
	u  *store.User
	p  *store.Project
	mu sync.Mutex
}

func newClaimRace(t *testing.T, open Opener) *claimRace {
	d := open(t)
	u := NewUser(t, d, "")
	return &claimRace{t: t, d: d, u: u, p: NewProject(t, d, u.ID)}
}

// together runs fn on every host at once (host i runs fn(i)): they start on a closed channel so
// they overlap.
func (r *claimRace) together(fn func(i int)) { Together(claimHosts, fn) }

// tasks creates one round of tasks in status.
func (r *claimRace) tasks(status string) []string {
	r.t.Helper()
	ids := make([]string, claimPerRound)
	for i := range ids {
		tk := &store.Task{ID: uuid.NewString(), ProjectID: r.p.ID, UserID: r.u.ID, Type: "video", Status: status}
		if err := r.d.CreateTask(context.Background(), tk); err != nil {
			r.t.Fatal(err)
		}
		ids[i] = tk.ID
	}
	return ids
}

// claim runs one ClaimTasks and counts the tasks it moved in seen.
func (r *claimRace) claim(p store.ClaimTasksParams, seen map[string]int) []store.Task {
	got, err := r.d.ClaimTasks(context.Background(), p)
	if err != nil {
		r.t.Errorf("ClaimTasks(%s -> %s): %v", p.From, p.To, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, x := range got {
		if x.Status != p.To {
			r.t.Errorf("ClaimTasks(%s -> %s) returned a task %s", p.From, p.To, x.Status)
		}
		seen[x.ID]++
	}
	return got
}

// finish ends a round's tasks so the next round's claims do not see them.
func (r *claimRace) finish(ids []string) {
	r.t.Helper()
	for _, id := range ids {
		if _, err := r.d.UpdateTask(context.Background(), store.TaskUpdate{ID: id, From: []string{store.TaskQueued, store.TaskRunning},
			To: store.TaskSuccess, Completed: true}); err != nil {
			r.t.Fatal(err)
		}
	}
}

// testTaskOrphanClaims: half the hosts take orphans back (tasks left running without a run) while
// the others, further on in their pass, dispatch the queue. A task taken back and dispatched
// again has no run yet but is fresh: it is not an orphan, and taking it back once more would
// start it twice.
func testTaskOrphanClaims(t *testing.T, open Opener) {
	r := newClaimRace(t, open)
	bad := 0
	for range claimRounds {
		ids := r.tasks(store.TaskRunning)
		clockStep(r.d)
		stale := r.d.Now() // every task of the round was last updated before it
		orphans := store.ClaimTasksParams{From: store.TaskRunning, To: store.TaskQueued, Limit: claimPerRound, StaleBefore: stale}
		dispatch := store.ClaimTasksParams{From: store.TaskQueued, To: store.TaskRunning, Limit: claimPerRound}
		requeued, dispatched := map[string]int{}, map[string]int{}
		var reaping sync.WaitGroup
		reaping.Add(claimHosts / 2)
		reaped := make(chan struct{})
		go func() { reaping.Wait(); close(reaped) }()
		r.together(func(i int) {
			if i%2 == 0 {
				defer reaping.Done()
				for range 3 {
					r.claim(orphans, requeued)
				}
				return
			}
			for {
				r.claim(dispatch, dispatched)
				select {
				case <-reaped:
					return
				default:
				}
			}
		})
		// A later pass takes what a claim skipped while another host held the row.
		r.claim(orphans, requeued)
		r.claim(dispatch, dispatched)
		for _, id := range ids {
			if requeued[id] != 1 || dispatched[id] != 1 {
				if bad++; bad <= 3 {
					t.Logf("task %s re-queued %d times and dispatched %d times, want 1 and 1", id, requeued[id], dispatched[id])
				}
			}
		}
		r.finish(ids)
	}
	if bad > 0 {
		t.Errorf("%d of %d orphans were not re-queued and dispatched exactly once (a freshly dispatched task taken back)",
			bad, claimRounds*claimPerRound)
	}
}

// testTaskBackoffClaims: each host dispatches the queue and sends what it took back with a
// back-off of an hour, as a failed attempt with retries left does; no task may run again before.
func testTaskBackoffClaims(t *testing.T, open Opener) {
	r := newClaimRace(t, open)
	ctx := context.Background()
	bad := 0
	for range claimRounds {
		ids := r.tasks(store.TaskQueued)
		dispatched := map[string]int{}
		attempt := func() {
			for _, x := range r.claim(store.ClaimTasksParams{From: store.TaskQueued, To: store.TaskRunning, Limit: claimPerRound}, dispatched) {
				next := r.d.Now().Add(time.Hour)
				if _, err := r.d.UpdateTask(ctx, store.TaskUpdate{ID: x.ID, From: []string{store.TaskRunning}, To: store.TaskQueued,
					IncRetry: true, NextAttemptAt: &next}); err != nil {
					t.Errorf("retry of %s: %v", x.ID, err)
				}
			}
		}
		r.together(func(int) {
			for range 3 {
				attempt()
			}
		})
		attempt() // a later pass takes what a claim skipped while another host held the row
		for _, id := range ids {
			if dispatched[id] != 1 {
				if bad++; bad <= 3 {
					t.Logf("task %s dispatched %d times, want 1", id, dispatched[id])
				}
			}
		}
		r.finish(ids)
	}
	if bad > 0 {
		t.Errorf("%d of %d tasks were not dispatched exactly once (dispatched again before the back-off was over)",
			bad, claimRounds*claimPerRound)
	}
}
