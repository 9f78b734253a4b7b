package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/reelforge/reelforge/host/store"
)

func testScheduling(t *testing.T, open Opener) {
	ctx := context.Background()
	d := open(t)
	u := NewUser(t, d, "")
	other := NewUser(t, d, "")
	p := NewProject(t, d, u.ID)
	q := NewProject(t, d, other.ID)
	tasks := []store.StrategyTask{
		{TaskID: "t1", WorkflowID: "video", Summary: "low old", DueDate: "2026-01-01", Priority: store.PriorityLow},
		{TaskID: "t2", WorkflowID: "music", Summary: "high", DueDate: "2026-01-03", Priority: store.PriorityHigh},
		{TaskID: "t3", WorkflowID: "video", Summary: "future", DueDate: "2026-02-01", Priority: store.PriorityHigh},
		{TaskID: "t4", WorkflowID: "graphic", Summary: "medium", DueDate: "2026-01-02"},
	}
	if err := d.ReplaceStrategyTasks(ctx, p.ID, tasks); err != nil {
		t.Fatalf("ReplaceStrategyTasks: %v", err)
	}
	// The same blueprint ids in another project do not clash.
	if err := d.ReplaceStrategyTasks(ctx, q.ID, []store.StrategyTask{{TaskID: "t1", WorkflowID: "video", DueDate: "2026-01-01", Priority: store.PriorityHigh}}); err != nil {
		t.Fatalf("ReplaceStrategyTasks(other project): %v", err)
	}
	ids := func(ts []store.StrategyTask) []string {
		var out []string
		for _, t := range ts {
			out = append(out, t.ProjectID[:4]+"/"+t.TaskID)
		}
		return out
	}
	due, err := d.ListDueStrategyTasks(ctx, store.DueStrategyTasksParams{Today: "2026-01-15", UserID: u.ID, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	pp := p.ID[:4] + "/"
	if diff := cmp.Diff([]string{pp + "t2", pp + "t4", pp + "t1"}, ids(due)); diff != "" {
		t.Errorf("ListDueStrategyTasks order (-want +got):\n%s", diff)
	}
	if len(due) > 0 && (due[0].ProjectName != p.Name || due[0].UserID != u.ID) {
		t.Errorf("due task = %+v, want project name and owner", due[0])
	}
	all, _ := d.ListDueStrategyTasks(ctx, store.DueStrategyTasksParams{Today: "2026-01-15", Limit: 2})
	if len(all) != 2 {
		t.Errorf("ListDueStrategyTasks(limit 2, all users) = %d, want 2", len(all))
	}

	// A double start claims once.
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := d.StartAutoRun(ctx, &store.AutoRun{ProjectID: p.ID, StrategyTaskID: "t2", WorkflowID: "music"})
			if err == nil {
				mu.Lock()
				wins++
				mu.Unlock()
			} else if !errors.Is(err, store.ErrConflict) {
				t.Errorf("StartAutoRun = %v, want nil or ErrConflict", err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("concurrent StartAutoRun won %d times, want 1", wins)
	}
	due, _ = d.ListDueStrategyTasks(ctx, store.DueStrategyTasksParams{Today: "2026-01-15", UserID: u.ID, Limit: 10})
	if diff := cmp.Diff([]string{pp + "t4", pp + "t1"}, ids(due)); diff != "" {
		t.Errorf("due tasks with t2 running (-want +got):\n%s", diff)
	}
	if len(due) > 0 && due[0].RunningRuns != 1 {
		t.Errorf("RunningRuns = %d, want 1", due[0].RunningRuns)
	}
	if err := d.SetAutoRunRun(ctx, store.AutoRunRunParams{ProjectID: p.ID, StrategyTaskID: "t2", RunID: "run-a"}); err != nil {
		t.Fatalf("SetAutoRunRun: %v", err)
	}
	if err := d.FinishAutoRun(ctx, store.FinishAutoRunParams{ProjectID: p.ID, StrategyTaskID: "t2", RunID: "run-b", Status: store.AutoRunCompleted}); !errors.Is(err, store.ErrStale) {
		t.Errorf("FinishAutoRun(other run) = %v, want ErrStale", err)
	}
	if err := d.FinishAutoRun(ctx, store.FinishAutoRunParams{ProjectID: p.ID, StrategyTaskID: "t2", RunID: "run-a", Status: store.AutoRunCompleted, Trace: []byte(`[{"step_id":"a"}]`)}); err != nil {
		t.Fatalf("FinishAutoRun: %v", err)
	}
	a, err := d.GetAutoRun(ctx, p.ID, "t2")
	if err != nil || a.Status != store.AutoRunCompleted || a.RunID != "run-a" || a.CompletedAt == nil || len(a.Trace) == 0 {
		t.Errorf("GetAutoRun = %+v, %v; want completed with trace", a, err)
	}
	// A failed mark may be started again; a running one may not.
	if err := d.StartAutoRun(ctx, &store.AutoRun{ProjectID: p.ID, StrategyTaskID: "t4", WorkflowID: "graphic"}); err != nil {
		t.Fatal(err)
	}
	if err := d.FinishAutoRun(ctx, store.FinishAutoRunParams{ProjectID: p.ID, StrategyTaskID: "t4", Status: store.AutoRunFailed}); err != nil {
		t.Fatalf("FinishAutoRun(no run yet): %v", err)
	}
	if err := d.StartAutoRun(ctx, &store.AutoRun{ProjectID: p.ID, StrategyTaskID: "t4", WorkflowID: "graphic"}); err != nil {
		t.Errorf("StartAutoRun after failure = %v, want nil", err)
	}

	if _, err := d.SchedulerMark(ctx, "automation"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SchedulerMark(unset) = %v, want ErrNotFound", err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, when := range []time.Time{at.Add(-time.Hour), at} {
		if err := d.SetSchedulerMark(ctx, "automation", when); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := d.SchedulerMark(ctx, "automation"); err != nil || !got.Equal(at) {
		t.Errorf("SchedulerMark = %v, %v; want %v", got, err, at)
	}
	if err := d.ReplaceStrategyTasks(ctx, p.ID, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := d.ListStrategyTasks(ctx, p.ID); len(got) != 0 {
		t.Errorf("ListStrategyTasks after replace with none = %d, want 0", len(got))
	}
}

func testLeaderLock(t *testing.T, open Opener) {
	ctx := context.Background()
	d := open(t)
	name := "test-" + SchemaName()
	l, ok, err := d.TryLeaderLock(ctx, name)
	if err != nil || !ok {
		t.Fatalf("TryLeaderLock = %v, %v; want granted", ok, err)
	}
	if err := l.Check(ctx); err != nil {
		t.Errorf("Check = %v", err)
	}
	if d.Name() == "postgres" {
		if _, ok, err := d.TryLeaderLock(ctx, name); ok || err != nil {
			t.Errorf("second TryLeaderLock = %v, %v; want refused", ok, err)
		}
	}
	l.Release()
	l.Release()
	l2, ok, err := d.TryLeaderLock(ctx, name)
	if err != nil || !ok {
		t.Fatalf("TryLeaderLock after release = %v, %v", ok, err)
	}
	l2.Release()
}

// testStrategyTasksConcurrentReplace: a project's blueprint saved several times at once (a
// double submit, two hosts) leaves exactly one blueprint's tasks, whether the blueprints' task
// ids differ or are the same; none of the saves fails. The first round also opens the driver's
// connections, so that the later rounds' saves do start together.
func testStrategyTasksConcurrentReplace(t *testing.T, open Opener) {
	ctx := context.Background()
	d := open(t)
	u := NewUser(t, d, "")
	p := NewProject(t, d, u.ID)
	const n = 8
	replace := func(ids func(i int) []string) (sets [][]string) {
		t.Helper()
		errs := make([]error, n)
		tasks := make([][]store.StrategyTask, n)
		for i := range n {
			for j, id := range ids(i) {
				tasks[i] = append(tasks[i], store.StrategyTask{TaskID: id, WorkflowID: "video", DueDate: fmt.Sprintf("2026-01-%02d", j+1)})
			}
			sets = append(sets, ids(i))
		}
		Together(n, func(i int) { errs[i] = d.ReplaceStrategyTasks(ctx, p.ID, tasks[i]) })
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("concurrent ReplaceStrategyTasks: %v", err)
		}
		return sets
	}
	left := func() []string {
		t.Helper()
		got, err := d.ListStrategyTasks(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, st := range got {
			ids = append(ids, st.TaskID)
		}
		return ids
	}
	for round := range 10 {
		sets := replace(func(i int) []string {
			return []string{fmt.Sprintf("r%d-s%d-a", round, i), fmt.Sprintf("r%d-s%d-b", round, i)}
		})
		got := left()
		one := false
		for _, set := range sets {
			one = one || cmp.Equal(set, got)
		}
		if !one {
			t.Fatalf("round %d: %d concurrent replaces left tasks %v, want the tasks of one of them", round, n, got)
		}
	}
	for range 5 {
		replace(func(int) []string { return []string{"same-a", "same-b"} })
		if got := left(); !cmp.Equal(got, []string{"same-a", "same-b"}) {
			t.Fatalf("%d concurrent replaces with the same ids left %v", n, got)
		}
	}
}

// testAutoRunOnce: a strategy task runs once. Triggers that act on one listing of the due tasks
// (the automation timer and the tick, or a doubled call) each try to start it; whichever comes
// after the first has started it, or after its run has completed, is refused. Only a failed mark
// is started again.
func testAutoRunOnce(t *testing.T, open Opener) {
	ctx := context.Background()
	d := open(t)
	u := NewUser(t, d, "")
	p := NewProject(t, d, u.ID)
	if err := d.ReplaceStrategyTasks(ctx, p.ID, []store.StrategyTask{{TaskID: "x", WorkflowID: "video", DueDate: "2026-01-01"}}); err != nil {
		t.Fatal(err)
	}
	due, err := d.ListDueStrategyTasks(ctx, store.DueStrategyTasksParams{Today: "2026-01-15", ProjectIDs: []string{p.ID}})
	if err != nil || len(due) != 1 {
		t.Fatalf("ListDueStrategyTasks = %v, %v; want the task", due, err)
	}
	// Each trigger runs the task to its end when it wins the start.
	const n = 8
	var wins atomic.Int32
	Together(n, func(i int) {
		err := d.StartAutoRun(ctx, &store.AutoRun{ProjectID: p.ID, StrategyTaskID: "x", WorkflowID: "video"})
		if errors.Is(err, store.ErrConflict) {
			return
		}
		if err != nil {
			t.Errorf("StartAutoRun = %v, want nil or ErrConflict", err)
			return
		}
		wins.Add(1)
		run := fmt.Sprint("run-", i)
		if err := d.SetAutoRunRun(ctx, store.AutoRunRunParams{ProjectID: p.ID, StrategyTaskID: "x", RunID: run}); err != nil {
			t.Errorf("SetAutoRunRun: %v", err)
		}
		if err := d.FinishAutoRun(ctx, store.FinishAutoRunParams{ProjectID: p.ID, StrategyTaskID: "x", RunID: run,
			Status: store.AutoRunCompleted}); err != nil {
			t.Errorf("FinishAutoRun: %v", err)
		}
	})
	if wins.Load() != 1 {
		t.Errorf("%d triggers of one strategy task started it %d times, want once", n, wins.Load())
	}
	if err := d.StartAutoRun(ctx, &store.AutoRun{ProjectID: p.ID, StrategyTaskID: "x", WorkflowID: "video"}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("StartAutoRun of a completed task = %v, want ErrConflict", err)
	}
	if a, err := d.GetAutoRun(ctx, p.ID, "x"); err != nil || a.Status != store.AutoRunCompleted || a.CompletedAt == nil {
		t.Errorf("GetAutoRun = %+v, %v; want it still completed", a, err)
	}
	if due, _ := d.ListDueStrategyTasks(ctx, store.DueStrategyTasksParams{Today: "2026-01-15", ProjectIDs: []string{p.ID}}); len(due) != 0 {
		t.Errorf("due tasks after the task completed = %v, want none", due)
	}
}
