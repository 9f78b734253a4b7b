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
