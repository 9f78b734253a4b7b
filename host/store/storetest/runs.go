package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/internal/testtool"
	"github.com/reelforge/reelforge/sdk/engine"
)

func newRun(t *testing.T, d store.Driver, userID, workflow string) *store.Run {
	t.Helper()
	r := &store.Run{ID: uuid.NewString(), WorkflowID: workflow, UserID: userID, Inputs: json.RawMessage(`{"topic":"x"}`),
		UserContext: json.RawMessage(`{"user_id":"` + userID + `"}`)}
	if err := d.CreateRun(context.Background(), r); err != nil {
		t.Fatalf("CreateRun: %v", err)
	}
	return r
}

func testRuns(t *testing.T, open Opener) {
	ctx := context.Background()
	d := open(t)
	u := NewUser(t, d, "")
	r := newRun(t, d, u.ID, "voiceover")
	got, err := d.GetRun(ctx, r.ID)
	if err != nil {
		t.Fatalf("GetRun: %v", err)
	}
	if got.Status != store.RunPending || got.Attempt != 1 || string(got.Inputs) == "" || got.LeaseUntil != nil {
		t.Errorf("new run = %+v, want pending, attempt 1, inputs, no lease", got)
	}
	if _, err := d.GetRun(ctx, uuid.NewString()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetRun(unknown) = %v, want ErrNotFound", err)
	}

	// Claim: the pending run, once.
	c, err := d.ClaimRun(ctx, "host-a", time.Minute)
	if err != nil || c.ID != r.ID || c.ClaimedBy != "host-a" || c.LeaseUntil == nil {
		t.Fatalf("ClaimRun = %+v, %v; want the run claimed by host-a", c, err)
	}
	if _, err := d.ClaimRun(ctx, "host-b", time.Minute); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ClaimRun of a pending run claimed by another host = %v, want ErrNotFound", err)
	}
	if _, err := d.UpdateRun(ctx, r.ID, store.RunUpdate{From: []string{store.RunPending}, Status: store.RunRunning, Owner: "host-b"}); !errors.Is(err, store.ErrStale) {
		t.Errorf("UpdateRun by a host without the claim = %v, want ErrStale", err)
	}
	run, err := d.UpdateRun(ctx, r.ID, store.RunUpdate{From: []string{store.RunPending}, Status: store.RunRunning, Owner: "host-a", Started: true})
	if err != nil || run.Status != store.RunRunning || run.StartedAt == nil {
		t.Fatalf("pending -> running = %+v, %v", run, err)
	}
	if _, err := d.ClaimRun(ctx, "host-b", time.Minute); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ClaimRun with the only run leased = %v, want ErrNotFound", err)
	}
	if err := d.RenewLease(ctx, store.RunLeaseParams{ID: r.ID, Owner: "host-b", Lease: time.Minute}); !errors.Is(err, store.ErrStale) {
		t.Errorf("RenewLease by another host = %v, want ErrStale", err)
	}
	if err := d.RenewLease(ctx, store.RunLeaseParams{ID: r.ID, Owner: "host-a", Lease: time.Minute}); err != nil {
		t.Errorf("RenewLease = %v", err)
	}
	// An expired lease (a dead host) is claimed by another host.
	past := d.Now().Add(-time.Second)
	if _, err := d.UpdateRun(ctx, r.ID, store.RunUpdate{From: []string{store.RunRunning}, Status: store.RunRunning, Lease: &past}); err != nil {
		t.Fatalf("expire lease: %v", err)
	}
	c, err = d.ClaimRun(ctx, "host-b", time.Minute)
	if err != nil || c.ID != r.ID || c.ClaimedBy != "host-b" || c.Status != store.RunRunning || c.Recoveries != 1 {
		t.Fatalf("ClaimRun after lease expiry = %+v, %v", c, err)
	}
	if err := d.SetRunProgress(ctx, store.RunProgressParams{ID: r.ID, Owner: "", Progress: 50, CurrentStep: "write"}); err != nil {
		t.Errorf("SetRunProgress: %v", err)
	}
	if err := d.SetRunProgress(ctx, store.RunProgressParams{ID: r.ID, Owner: "", Progress: 60, CurrentStep: ""}); err != nil {
		t.Errorf("SetRunProgress without a step: %v", err)
	}
	if got, err := d.GetRun(ctx, r.ID); err != nil || got.Progress != 60 || got.CurrentStep != "write" {
		t.Errorf("after SetRunProgress(60, \"\"): progress %v, current step %q (%v); want 60 and the step kept, \"write\"", got.Progress, got.CurrentStep, err)
	}
	// Fencing: the claim taken over (host-a's) writes nothing more; the new owner's go through.
	if err := d.FenceRun(ctx, r.ID, "host-a"); !errors.Is(err, store.ErrStale) {
		t.Errorf("FenceRun of the claim taken over = %v, want ErrStale", err)
	}
	if err := d.FenceRun(ctx, r.ID, "host-b"); err != nil {
		t.Errorf("FenceRun of the claim in force = %v", err)
	}
	if err := d.FenceRun(ctx, uuid.NewString(), "host-b"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("FenceRun of an unknown run = %v, want ErrNotFound", err)
	}
	if err := d.SetRunProgress(ctx, store.RunProgressParams{ID: r.ID, Owner: "host-a", Progress: 90, CurrentStep: "late"}); !errors.Is(err, store.ErrStale) {
		t.Errorf("SetRunProgress by the claim taken over = %v, want ErrStale", err)
	}
	if err := d.SetRunProgress(ctx, store.RunProgressParams{ID: r.ID, Owner: "host-b", Progress: 60, CurrentStep: "write"}); err != nil {
		t.Errorf("SetRunProgress by the claim in force: %v", err)
	}
	if err := d.UpsertTraceStep(ctx, &store.TraceStep{RunID: r.ID, StepID: "late", Status: "completed", Owner: "host-a"}); !errors.Is(err, store.ErrStale) {
		t.Errorf("UpsertTraceStep by the claim taken over = %v, want ErrStale", err)
	}

	// Trace steps keep their first position.
	for _, s := range []struct{ id, status string }{{"a", "running"}, {"b", "running"}, {"a", "completed"}} {
		if err := d.UpsertTraceStep(ctx, &store.TraceStep{RunID: r.ID, StepID: s.id, Status: s.status, Step: json.RawMessage(`{"step_id":"` + s.id + `"}`)}); err != nil {
			t.Fatalf("UpsertTraceStep: %v", err)
		}
	}
	steps, err := d.ListTraceSteps(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range steps {
		ids = append(ids, s.StepID+":"+s.Status)
	}
	if diff := cmp.Diff([]string{"a:completed", "b:running"}, ids); diff != "" {
		t.Errorf("trace (-want +got):\n%s", diff)
	}

	// A running run with no lease and no open job is an orphan once it has not changed for a while.
	if _, err := d.UpdateRun(ctx, r.ID, store.RunUpdate{From: []string{store.RunRunning}, Status: store.RunRunning, Release: true}); err != nil {
		t.Fatal(err)
	}
	if ids, err := d.ListOrphanRuns(ctx, d.Now().Add(time.Second), 10); err != nil || len(ids) != 1 || ids[0] != r.ID {
		t.Errorf("ListOrphanRuns = %v, %v; want the run", ids, err)
	}
	if ids, _ := d.ListOrphanRuns(ctx, d.Now().Add(-time.Minute), 10); len(ids) != 0 {
		t.Errorf("ListOrphanRuns(recent) = %v, want none", ids)
	}
	// running -> paused -> running -> completed; then nothing moves it.
	if _, err := d.UpdateRun(ctx, r.ID, store.RunUpdate{From: []string{store.RunRunning}, Status: store.RunPaused, Awaiting: json.RawMessage(`{"step_id":"h","prompt":"ok?"}`), Release: true}); err != nil {
		t.Fatalf("running -> paused: %v", err)
	}
	if _, err := d.UpdateRun(ctx, r.ID, store.RunUpdate{From: []string{store.RunPaused}, Status: store.RunRunning, ClearAwait: true, ResumeInput: json.RawMessage(`{"ok":true}`)}); err != nil {
		t.Fatalf("paused -> running: %v", err)
	}
	done, err := d.UpdateRun(ctx, r.ID, store.RunUpdate{From: []string{store.RunRunning}, Status: store.RunCompleted, Outputs: json.RawMessage(`{"script":"s"}`), Completed: true, Release: true})
	if err != nil || done.CompletedAt == nil || string(done.Outputs) == "" || done.Awaiting != nil || done.Progress != 60 {
		t.Fatalf("running -> completed = %+v, %v", done, err)
	}
	if _, err := d.UpdateRun(ctx, r.ID, store.RunUpdate{From: []string{store.RunPending, store.RunRunning, store.RunPaused}, Status: store.RunCancelled}); !errors.Is(err, store.ErrStale) {
		t.Errorf("cancel of a completed run = %v, want ErrStale", err)
	}
	if _, err := d.UpdateRun(ctx, uuid.NewString(), store.RunUpdate{From: []string{store.RunPending}, Status: store.RunCancelled}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("UpdateRun(unknown) = %v, want ErrNotFound", err)
	}

	// Listing and the quota.
	r2 := newRun(t, d, u.ID, "graphic")
	if _, err := d.UpdateRun(ctx, r2.ID, store.RunUpdate{From: []string{store.RunPending}, Status: store.RunCancelled}); err != nil {
		t.Fatalf("pending -> cancelled: %v", err)
	}
	newRun(t, d, NewUser(t, d, "").ID, "graphic")
	list, total, err := d.ListRuns(ctx, store.ListRunsParams{UserID: u.ID})
	if err != nil || total != 2 || len(list) != 2 || list[0].ID != r2.ID {
		t.Errorf("ListRuns = %d runs (total %d), %v; want 2, newest first", len(list), total, err)
	}
	list, total, _ = d.ListRuns(ctx, store.ListRunsParams{UserID: u.ID, Status: store.RunCompleted, WorkflowID: "voiceover"})
	if total != 1 || len(list) != 1 || list[0].ID != r.ID {
		t.Errorf("ListRuns(completed, voiceover) = %d (total %d), want the first run", len(list), total)
	}
	hourAgo := store.RunQuota{Since: d.Now().Add(-time.Hour), Limit: 2}
	over := &store.Run{ID: uuid.NewString(), WorkflowID: "graphic", UserID: u.ID}
	if err := d.CreateRunInQuota(ctx, over, hourAgo); !errors.Is(err, store.ErrQuotaExceeded) {
		t.Errorf("CreateRunInQuota(2 runs, limit 2) = %v, want ErrQuotaExceeded", err)
	}
	if _, err := d.GetRun(ctx, over.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetRun(refused run) = %v, want ErrNotFound", err)
	}
	hourAgo.Limit = 3
	in := &store.Run{ID: uuid.NewString(), WorkflowID: "graphic", UserID: u.ID}
	if err := d.CreateRunInQuota(ctx, in, hourAgo); err != nil {
		t.Errorf("CreateRunInQuota(2 runs, limit 3) = %v, want nil", err)
	}
	if got, err := d.GetRun(ctx, in.ID); err != nil || got.Status != store.RunPending || got.Attempt != 1 {
		t.Errorf("GetRun(run in quota) = %+v, %v; want a pending run", got, err)
	}
	later := &store.Run{ID: uuid.NewString(), WorkflowID: "graphic", UserID: u.ID}
	if err := d.CreateRunInQuota(ctx, later, store.RunQuota{Since: d.Now().Add(time.Hour), Limit: 1}); err != nil {
		t.Errorf("CreateRunInQuota(no runs since, limit 1) = %v, want nil", err)
	}
	if err := d.CreateRunInQuota(ctx, &store.Run{ID: uuid.NewString(), WorkflowID: "graphic", UserID: uuid.NewString()}, hourAgo); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("CreateRunInQuota(unknown user) = %v, want ErrNotFound", err)
	}
}

// testRunQuotaConcurrentStarts: starts by one user at the same time (two clients, or two hosts on
// one database) never pass the quota together: with a limit of 1, one run is stored and the others
// are refused. The first round, by as many users, also opens the driver's connections, so that the
// next rounds' starts do begin together.
func testRunQuotaConcurrentStarts(t *testing.T, open Opener) {
	ctx := context.Background()
	d := open(t)
	const n = 16
	start := func(users []*store.User, limit int) (created, refused int) {
		t.Helper()
		since := d.Now().Add(-time.Hour)
		errs := make([]error, n)
		Together(n, func(i int) {
			u := users[i%len(users)]
			errs[i] = d.CreateRunInQuota(ctx, &store.Run{ID: uuid.NewString(), WorkflowID: "graphic", UserID: u.ID},
				store.RunQuota{Since: since, Limit: limit})
		})
		for _, err := range errs {
			switch {
			case err == nil:
				created++
			case errors.Is(err, store.ErrQuotaExceeded):
				refused++
			default:
				t.Fatalf("CreateRunInQuota: %v", err)
			}
		}
		return created, refused
	}
	var users []*store.User
	for range n {
		users = append(users, NewUser(t, d, ""))
	}
	if created, refused := start(users, 1); created != n || refused != 0 {
		t.Fatalf("%d users starting a run each, limit 1: %d created, %d refused; want %d, 0", n, created, refused, n)
	}
	// Each round raises the limit: the runs of the rounds before count against it.
	one, stored := []*store.User{NewUser(t, d, "")}, 0
	for _, limit := range []int{1, 3, 6} {
		created, refused := start(one, limit)
		_, total, err := d.ListRuns(ctx, store.ListRunsParams{UserID: one[0].ID})
		if err != nil {
			t.Fatal(err)
		}
		want := limit - stored
		stored = limit
		if created != want || refused != n-want || total != limit {
			t.Errorf("%d concurrent starts by one user, limit %d: %d created, %d refused, %d runs stored; want %d, %d, %d",
				n, limit, created, refused, total, want, n-want, limit)
		}
	}
}

// testDeleteRun: a finished run goes with its trace steps, jobs and assets, for its owner only; a
// run still going is refused (ErrStale) and keeps everything; another run's rows stay.
func testDeleteRun(t *testing.T, open Opener) {
	ctx := context.Background()
	d := open(t)
	me, other := NewUser(t, d, ""), NewUser(t, d, "")
	mk := func(status string) *store.Run {
		t.Helper()
		r := newRun(t, d, me.ID, "voiceover_video")
		if status != store.RunPending {
			if _, err := d.UpdateRun(ctx, r.ID, store.RunUpdate{From: []string{store.RunPending}, Status: status}); err != nil {
				t.Fatalf("UpdateRun: %v", err)
			}
		}
		if err := d.UpsertTraceStep(ctx, &store.TraceStep{RunID: r.ID, StepID: "render", Status: "completed", Step: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
		if err := d.CreateJob(ctx, &store.Job{ID: uuid.NewString(), RunID: r.ID, StepID: "render", Type: "videogen",
			Request: json.RawMessage(`{}`), TimeoutAt: d.Now().Add(time.Minute)}); err != nil {
			t.Fatal(err)
		}
		if err := d.CreateAsset(ctx, &store.Asset{ID: uuid.NewString(), UserID: me.ID, FilePath: "assets/" + me.ID + "/video/" + r.ID + ".mp4",
			FileType: store.AssetVideo, SourceRunID: r.ID}); err != nil {
			t.Fatal(err)
		}
		return r
	}
	kept := func(r *store.Run) (steps, jobs, assets int) {
		t.Helper()
		s, err1 := d.ListTraceSteps(ctx, r.ID)
		j, err2 := d.ListRunJobs(ctx, r.ID)
		a, err3 := d.ListRunAssets(ctx, r.ID)
		if err := errors.Join(err1, err2, err3); err != nil {
			t.Fatal(err)
		}
		return len(s), len(j), len(a)
	}
	done, running, neighbour := mk(store.RunCompleted), mk(store.RunRunning), mk(store.RunFailed)

	if err := d.DeleteRun(ctx, done.ID, other.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("DeleteRun(another user's) = %v, want ErrNotFound", err)
	}
	if err := d.DeleteRun(ctx, uuid.NewString(), me.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("DeleteRun(unknown) = %v, want ErrNotFound", err)
	}
	if err := d.DeleteRun(ctx, running.ID, me.ID); !errors.Is(err, store.ErrStale) {
		t.Errorf("DeleteRun(running) = %v, want ErrStale", err)
	}
	if s, j, a := kept(running); s != 1 || j != 1 || a != 1 {
		t.Errorf("a refused delete left %d steps, %d jobs, %d assets; want all", s, j, a)
	}
	if err := d.DeleteRun(ctx, done.ID, me.ID); err != nil {
		t.Fatalf("DeleteRun: %v", err)
	}
	if _, err := d.GetRun(ctx, done.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetRun(deleted) = %v, want ErrNotFound", err)
	}
	if s, j, a := kept(done); s+j+a != 0 {
		t.Errorf("the deleted run left %d steps, %d jobs, %d assets", s, j, a)
	}
	if s, j, a := kept(neighbour); s != 1 || j != 1 || a != 1 {
		t.Errorf("another run kept %d steps, %d jobs, %d assets; want all", s, j, a)
	}
	if err := d.DeleteRun(ctx, done.ID, me.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("DeleteRun(again) = %v, want ErrNotFound", err)
	}
}

func testJobs(t *testing.T, open Opener) {
	ctx := context.Background()
	d := open(t)
	u := NewUser(t, d, "")
	r := newRun(t, d, u.ID, "live")
	j := &store.Job{ID: uuid.NewString(), RunID: r.ID, StepID: "s", Type: "graph", Request: json.RawMessage(`{"payload":{}}`),
		MaxRetries: 1, TimeoutAt: d.Now().Add(-time.Second)}
	if err := d.CreateJob(ctx, j); err != nil {
		t.Fatalf("CreateJob: %v", err)
	}
	if err := d.MarkJobDispatched(ctx, store.DispatchJobParams{ID: j.ID}); err != nil {
		t.Fatalf("MarkJobDispatched: %v", err)
	}
	due, err := d.ListDueJobs(ctx, d.Now(), 10)
	if err != nil || len(due) != 1 || due[0].ID != j.ID || due[0].Status != engine.JobRunning {
		t.Fatalf("ListDueJobs = %+v, %v", due, err)
	}
	rj, err := d.RetryJob(ctx, j.ID, d.Now().Add(time.Minute))
	if err != nil || rj.RetryCount != 1 {
		t.Fatalf("RetryJob = %+v, %v", rj, err)
	}
	if _, err := d.RetryJob(ctx, j.ID, d.Now().Add(time.Minute)); !errors.Is(err, store.ErrStale) {
		t.Errorf("RetryJob before the timeout = %v, want ErrStale", err)
	}
	if due, _ := d.ListDueJobs(ctx, d.Now(), 10); len(due) != 0 {
		t.Errorf("ListDueJobs after retry = %d, want 0", len(due))
	}
	res, err := d.ResolveJob(ctx, store.ResolveJobParams{ID: j.ID, Status: engine.JobCompleted, Result: json.RawMessage(`{"ok":1}`)})
	if err != nil || res.Status != engine.JobCompleted || res.ResolvedAt == nil || string(res.Result) == "" {
		t.Fatalf("ResolveJob = %+v, %v", res, err)
	}
	if _, err := d.ResolveJob(ctx, store.ResolveJobParams{ID: j.ID, Status: engine.JobFailed, Error: json.RawMessage(`{}`)}); !errors.Is(err, store.ErrStale) {
		t.Errorf("second ResolveJob = %v, want ErrStale (duplicate)", err)
	}
	if _, err := d.ResolveJob(ctx, store.ResolveJobParams{ID: uuid.NewString(), Status: engine.JobFailed}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ResolveJob(unknown) = %v, want ErrNotFound", err)
	}
	got, _ := d.GetJob(ctx, j.ID)
	if got.Status != engine.JobCompleted {
		t.Errorf("job after a refused resolve = %s, want completed", got.Status)
	}
	jobs, err := d.ListRunJobs(ctx, r.ID)
	if err != nil || len(jobs) != 1 {
		t.Errorf("ListRunJobs = %d, %v", len(jobs), err)
	}
}

// testJobDeadline: a job that reports progress moves its deadline (ExtendJob), and the sweeper's
// TimeOutJob times out only a job still past its deadline, once; a timed-out job is not extended.
func testJobDeadline(t *testing.T, open Opener) {
	ctx := context.Background()
	d := open(t)
	u := NewUser(t, d, "")
	r := newRun(t, d, u.ID, "live")
	j := &store.Job{ID: uuid.NewString(), RunID: r.ID, StepID: "s", Type: "graph", Request: json.RawMessage(`{}`),
		MaxRetries: 2, TimeoutAt: d.Now().Add(-time.Second)}
	if err := d.CreateJob(ctx, j); err != nil {
		t.Fatalf("CreateJob: %v", err)
	}
	listed := d.Now()
	if due, err := d.ListDueJobs(ctx, listed, 10); err != nil || len(due) != 1 {
		t.Fatalf("ListDueJobs = %+v, %v; want the job", due, err)
	}
	// Its executor calls back between the sweeper's listing and its time-out: the job lives on.
	later := d.Now().Add(time.Hour)
	ext, err := d.ExtendJob(ctx, j.ID, later)
	if err != nil || ext.TimeoutAt.Sub(later).Abs() >= time.Millisecond || ext.Status != engine.JobPending {
		t.Fatalf("ExtendJob = %+v, %v; want the job pending until %v", ext, err, later)
	}
	errObj := json.RawMessage(`{"code":"WORKFLOW_TIMEOUT","message":"silent"}`)
	if _, err := d.TimeOutJob(ctx, store.TimeOutJobParams{ID: j.ID, Now: listed, Error: errObj}); !errors.Is(err, store.ErrStale) {
		t.Errorf("TimeOutJob of an extended job = %v, want ErrStale", err)
	}
	if due, _ := d.ListDueJobs(ctx, d.Now(), 10); len(due) != 0 {
		t.Errorf("ListDueJobs after ExtendJob = %d jobs, want 0", len(due))
	}
	// Silent past its new deadline: timed out once, and no longer extended.
	past := later.Add(time.Second)
	got, err := d.TimeOutJob(ctx, store.TimeOutJobParams{ID: j.ID, Now: past, Error: errObj})
	if err != nil || got.Status != engine.JobTimeout || got.ResolvedAt == nil || !strings.Contains(string(got.Error), "silent") {
		t.Fatalf("TimeOutJob = %+v, %v; want the job timed out with the error", got, err)
	}
	if _, err := d.TimeOutJob(ctx, store.TimeOutJobParams{ID: j.ID, Now: past, Error: errObj}); !errors.Is(err, store.ErrStale) {
		t.Errorf("second TimeOutJob = %v, want ErrStale", err)
	}
	if _, err := d.ExtendJob(ctx, j.ID, past.Add(time.Hour)); !errors.Is(err, store.ErrStale) {
		t.Errorf("ExtendJob of a timed-out job = %v, want ErrStale", err)
	}
	if _, err := d.ExtendJob(ctx, uuid.NewString(), later); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ExtendJob(unknown) = %v, want ErrNotFound", err)
	}
	if _, err := d.TimeOutJob(ctx, store.TimeOutJobParams{ID: uuid.NewString(), Now: past, Error: errObj}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("TimeOutJob(unknown) = %v, want ErrNotFound", err)
	}
}

// newOrphanRun makes a running run with no lease and no open job: what ListOrphanRuns finds once
// it has not changed for a while.
func newOrphanRun(t *testing.T, d store.Driver, userID string) *store.Run {
	t.Helper()
	ctx := context.Background()
	r := newRun(t, d, userID, "video")
	if _, err := d.UpdateRun(ctx, r.ID, store.RunUpdate{From: []string{store.RunPending}, Status: store.RunRunning, Started: true, Release: true}); err != nil {
		t.Fatalf("pending -> running, released: %v", err)
	}
	return r
}

// testRunsOrphanClaim: the sweep claims a run it listed as an orphan only while it still is one.
// A run handed back and claimed by a host since the listing stays with that host.
func testRunsOrphanClaim(t *testing.T, open Opener) {
	ctx := context.Background()
	d := open(t)
	u := NewUser(t, d, "")
	handBack := func(id string) {
		t.Helper()
		back := d.Now()
		if _, err := d.UpdateRun(ctx, id, store.RunUpdate{From: []string{store.RunRunning}, Status: store.RunRunning, Lease: &back, Unclaim: true}); err != nil {
			t.Fatalf("hand back: %v", err)
		}
	}

	// An orphan is claimed once, for a recovery by the next host.
	o := newOrphanRun(t, d, u.ID)
	before := d.Now().Add(time.Second)
	if ids, err := d.ListOrphanRuns(ctx, before, 10); err != nil || len(ids) != 1 || ids[0] != o.ID {
		t.Fatalf("ListOrphanRuns = %v, %v; want the run", ids, err)
	}
	c, err := d.ClaimOrphanRun(ctx, store.ClaimOrphanRunParams{ID: o.ID, Before: before, Holder: "orphan"})
	if err != nil || c.ClaimedBy != "orphan" || c.LeaseUntil == nil || c.Status != store.RunRunning {
		t.Fatalf("ClaimOrphanRun = %+v, %v; want the run held by orphan with a lease", c, err)
	}
	if _, err := d.ClaimOrphanRun(ctx, store.ClaimOrphanRunParams{ID: o.ID, Before: before, Holder: "orphan"}); !errors.Is(err, store.ErrStale) {
		t.Errorf("second ClaimOrphanRun = %v, want ErrStale", err)
	}
	if c, err := d.ClaimRun(ctx, "host-b", time.Minute); err != nil || c.ID != o.ID || c.Recoveries != 1 {
		t.Fatalf("ClaimRun of the claimed orphan = %+v, %v; want it, a recovery", c, err)
	}
	if _, err := d.ClaimOrphanRun(ctx, store.ClaimOrphanRunParams{ID: uuid.NewString(), Before: before, Holder: "orphan"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ClaimOrphanRun(unknown) = %v, want ErrNotFound", err)
	}

	// Not an orphan by the listing's test: an open job, or a change since before.
	w := newOrphanRun(t, d, u.ID)
	j := &store.Job{ID: uuid.NewString(), RunID: w.ID, Type: "graph", TimeoutAt: d.Now().Add(time.Hour)}
	if err := d.CreateJob(ctx, j); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ClaimOrphanRun(ctx, store.ClaimOrphanRunParams{ID: w.ID, Before: d.Now().Add(time.Second), Holder: "orphan"}); !errors.Is(err, store.ErrStale) {
		t.Errorf("ClaimOrphanRun of a run waiting for a job = %v, want ErrStale", err)
	}
	if _, err := d.ResolveJob(ctx, store.ResolveJobParams{ID: j.ID, Status: engine.JobCompleted, Result: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ClaimOrphanRun(ctx, store.ClaimOrphanRunParams{ID: w.ID, Before: d.Now().Add(-time.Minute), Holder: "orphan"}); !errors.Is(err, store.ErrStale) {
		t.Errorf("ClaimOrphanRun of a run changed since before = %v, want ErrStale", err)
	}

	// The audit's interleaving: the sweep lists the run; a callback hands it back and host-a claims
	// it; then the sweep's claim must leave it to host-a.
	handBack(w.ID)
	time.Sleep(2 * time.Millisecond) // the handed-back lease is in the past
	a, err := d.ClaimRun(ctx, "host-a", time.Minute)
	if err != nil || a.ID != w.ID {
		t.Fatalf("ClaimRun = %+v, %v; want the handed-back run", a, err)
	}
	x := newOrphanRun(t, d, u.ID)
	before = d.Now().Add(time.Second)
	if ids, _ := d.ListOrphanRuns(ctx, before, 10); len(ids) != 1 || ids[0] != x.ID {
		t.Fatalf("ListOrphanRuns = %v, want the new run", ids)
	}
	handBack(x.ID)
	time.Sleep(2 * time.Millisecond)
	if a, err := d.ClaimRun(ctx, "host-a", time.Minute); err != nil || a.ID != x.ID {
		t.Fatalf("ClaimRun = %+v, %v; want the handed-back run", a, err)
	}
	if _, err := d.ClaimOrphanRun(ctx, store.ClaimOrphanRunParams{ID: x.ID, Before: before, Holder: "orphan"}); !errors.Is(err, store.ErrStale) {
		t.Errorf("ClaimOrphanRun of a run host-a claimed since the listing = %v, want ErrStale", err)
	}
	if err := d.RenewLease(ctx, store.RunLeaseParams{ID: x.ID, Owner: "host-a", Lease: time.Minute}); err != nil {
		t.Errorf("host-a's RenewLease after the sweep = %v, want nil (it still holds the run)", err)
	}
	if b, err := d.ClaimRun(ctx, "host-b", time.Minute); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ClaimRun by host-b = %+v, %v; want ErrNotFound (host-a executes the run)", b, err)
	}

	// The same at once, round after round (the first warms the connection pool): the sweep goes
	// through its listing while hosts claim; the listing holds runs handed back since (the sweep
	// must leave them) and orphans still (the sweep claims them, and a host may then take one over).
	for round := range 4 {
		var back, still []string
		for range 12 {
			back = append(back, newOrphanRun(t, d, u.ID).ID)
		}
		for range 4 {
			still = append(still, newOrphanRun(t, d, u.ID).ID)
		}
		before := d.Now().Add(time.Second)
		listed, err := d.ListOrphanRuns(ctx, before, 100)
		if err != nil || len(listed) != len(back)+len(still) {
			t.Fatalf("round %d: ListOrphanRuns = %d runs, %v; want %d", round, len(listed), err, len(back)+len(still))
		}
		for _, id := range back {
			handBack(id)
		}
		time.Sleep(2 * time.Millisecond)
		const hosts = 16
		claimed := make([]*store.Run, hosts)
		sweep := map[string]error{}
		Together(hosts+1, func(i int) {
			if i == hosts { // the sweep, through the runs it listed
				for _, id := range listed {
					_, err := d.ClaimOrphanRun(ctx, store.ClaimOrphanRunParams{ID: id, Before: before, Holder: "orphan"})
					sweep[id] = err
				}
				return
			}
			r, err := d.ClaimRun(ctx, fmt.Sprint("host-", i), time.Minute)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				t.Errorf("ClaimRun: %v", err)
			}
			claimed[i] = r
		})
		for i, r := range claimed {
			if r == nil {
				continue
			}
			if err := d.RenewLease(ctx, store.RunLeaseParams{ID: r.ID, Owner: fmt.Sprint("host-", i), Lease: time.Minute}); err != nil {
				t.Errorf("round %d: host-%d's RenewLease after the sweep = %v: the sweep took back a run the host claimed", round, i, err)
			}
		}
		for _, id := range back {
			if err := sweep[id]; !errors.Is(err, store.ErrStale) {
				t.Errorf("round %d: ClaimOrphanRun of a run handed back since the listing = %v, want ErrStale", round, err)
			}
		}
		for _, id := range still {
			if err := sweep[id]; err != nil {
				t.Errorf("round %d: ClaimOrphanRun of an orphan = %v", round, err)
			}
		}
		// Leave nothing claimable for the next round: finish every run of this one.
		for _, id := range append(back, still...) {
			if _, err := d.UpdateRun(ctx, id, store.RunUpdate{From: []string{store.RunRunning}, Status: store.RunCompleted, Completed: true, Release: true}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// testTraceConcurrentSteps: steps of one run reported at once (the node engine runs steps in
// parallel) take distinct positions, 1 to n, and keep them when reported again.
func testTraceConcurrentSteps(t *testing.T, open Opener) {
	ctx := context.Background()
	d := open(t)
	u := NewUser(t, d, "")
	const n = 16
	report := func(runID, status string) {
		t.Helper()
		errs := make([]error, n)
		Together(n, func(i int) {
			errs[i] = d.UpsertTraceStep(ctx, &store.TraceStep{RunID: runID, StepID: fmt.Sprint("s", i), Status: status,
				Step: json.RawMessage(`{}`)})
		})
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("UpsertTraceStep: %v", err)
		}
	}
	// Several runs: the first round warms the connection pool.
	for round := range 5 {
		r := newRun(t, d, u.ID, "video")
		report(r.ID, "running")
		first, err := d.ListTraceSteps(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		seqs := map[string]int{}
		var got []int
		for _, s := range first {
			seqs[s.StepID] = s.Seq
			got = append(got, s.Seq)
		}
		want := make([]int, n)
		for i := range want {
			want[i] = i + 1
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("round %d: seq of %d steps reported at once (-want +got):\n%s", round, n, diff)
		}
		report(r.ID, "completed")
		again, _ := d.ListTraceSteps(ctx, r.ID)
		for _, s := range again {
			if s.Status != "completed" || s.Seq != seqs[s.StepID] {
				t.Errorf("round %d: step %s reported again = %s at seq %d, want completed at seq %d", round, s.StepID, s.Status, s.Seq, seqs[s.StepID])
			}
		}
	}
	if err := d.UpsertTraceStep(ctx, &store.TraceStep{RunID: uuid.NewString(), StepID: "s", Status: "running"}); err == nil {
		t.Errorf("UpsertTraceStep of an unknown run = nil, want an error")
	}
}

// testRunsTakeBack: a host takes back its previous life's claims and held jobs at once (by its
// host id, not another's whose name it prefixes), and held jobs are renewed while their holder
// lives and listed as abandoned once their lease runs out.
func testRunsTakeBack(t *testing.T, open Opener) {
	ctx := context.Background()
	d := open(t)
	u := NewUser(t, d, "")
	mine := newRun(t, d, u.ID, "voiceover")
	if _, err := d.ClaimRun(ctx, "h1/a", time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := d.UpdateRun(ctx, mine.ID, store.RunUpdate{From: []string{store.RunPending}, Status: store.RunRunning, Owner: "h1/a", Started: true}); err != nil {
		t.Fatal(err)
	}
	other := newRun(t, d, u.ID, "voiceover")
	if _, err := d.ClaimRun(ctx, "h10/b", time.Hour); err != nil {
		t.Fatal(err)
	}
	if n, err := d.TakeBackRuns(ctx, "h1"); err != nil || n != 1 {
		t.Fatalf("TakeBackRuns(h1) = %d, %v; want 1", n, err)
	}
	c, err := d.ClaimRun(ctx, "h1/c", time.Hour)
	if err != nil || c.ID != mine.ID || c.Recoveries != 1 {
		t.Fatalf("ClaimRun after the take-back = %+v, %v; want h1's run, as a recovery", c, err)
	}
	if _, err := d.ClaimRun(ctx, "h1/d", time.Hour); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ClaimRun of h10's run = %v, want ErrNotFound (h1 takes back only its own)", err)
	}
	_ = other

	job := func(holder string, lease time.Duration) *store.Job {
		j := &store.Job{ID: uuid.NewString(), RunID: mine.ID, Type: "videogen", Request: json.RawMessage(`{}`), TimeoutAt: time.Now().Add(time.Hour)}
		if err := d.CreateJob(ctx, j); err != nil {
			t.Fatal(err)
		}
		if err := d.MarkJobDispatched(ctx, store.DispatchJobParams{ID: j.ID, Holder: holder, Lease: lease}); err != nil {
			t.Fatal(err)
		}
		return j
	}
	held := job("h1/life1", time.Hour)
	external := job("", time.Hour)
	short := job("h2/life", -time.Second)
	got, err := d.GetJob(ctx, held.ID)
	if err != nil || got.HeldBy != "h1/life1" || got.LeaseUntil == nil || got.Abandoned(time.Now()) {
		t.Fatalf("held job = %+v, %v; want held by h1/life1 under a lease", got, err)
	}
	abandoned := func() []string {
		jobs, err := d.ListAbandonedJobs(ctx, time.Now(), 10)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, j := range jobs {
			ids = append(ids, j.ID)
		}
		return ids
	}
	if diff := cmp.Diff([]string{short.ID}, abandoned()); diff != "" {
		t.Errorf("abandoned jobs (-want +got):\n%s", diff)
	}
	if n, err := d.RenewJobLeases(ctx, "h2/life", time.Hour); err != nil || n != 1 {
		t.Errorf("RenewJobLeases(h2/life) = %d, %v; want 1", n, err)
	}
	if got := abandoned(); len(got) != 0 {
		t.Errorf("abandoned after renewal = %v, want none", got)
	}
	if n, err := d.TakeBackJobs(ctx, "h1"); err != nil || n != 1 {
		t.Errorf("TakeBackJobs(h1) = %d, %v; want 1", n, err)
	}
	if diff := cmp.Diff([]string{held.ID}, abandoned()); diff != "" {
		t.Errorf("abandoned after h1's take-back (-want +got):\n%s", diff)
	}
	if j, _ := d.GetJob(ctx, external.ID); j.HeldBy != "" || j.LeaseUntil != nil {
		t.Errorf("external job = %+v, want held by nobody", j)
	}
}

// testIdempotencyDeadHolder: a reservation whose holder stopped renewing it (its host died with
// the request) is released to the next request with the key; a live one is not; a host's restart
// releases its previous life's reservations at once.
func testIdempotencyDeadHolder(t *testing.T, open Opener) {
	ctx := context.Background()
	d := open(t)
	u := NewUser(t, d, "")
	since := time.Now().Add(-24 * time.Hour)
	reserve := func(key, holder string, lease time.Duration) error {
		_, err := d.ReserveIdempotencyKey(ctx, &store.IdempotentResponse{UserID: u.ID, Key: key, RequestHash: "h", HeldBy: holder, Lease: lease}, since)
		return err
	}
	dead, live, mine := uuid.NewString(), uuid.NewString(), uuid.NewString()
	if err := reserve(dead, "h1/a", -time.Second); err != nil {
		t.Fatal(err)
	}
	if err := reserve(live, "h2/a", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := reserve(mine, "h3/a", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := reserve(dead, "h2/a", time.Hour); err != nil {
		t.Errorf("Reserve over a dead holder's key = %v, want it taken", err)
	}
	if err := reserve(live, "h1/b", time.Hour); !errors.Is(err, store.ErrConflict) {
		t.Errorf("Reserve over a live holder's key = %v, want ErrConflict", err)
	}
	if n, err := d.RenewIdempotencyLeases(ctx, "h2/a", time.Hour); err != nil || n != 2 {
		t.Errorf("RenewIdempotencyLeases(h2/a) = %d, %v; want 2", n, err)
	}
	if n, err := d.ReleaseIdempotencyKeysOf(ctx, "h3"); err != nil || n != 1 {
		t.Errorf("ReleaseIdempotencyKeysOf(h3) = %d, %v; want 1", n, err)
	}
	if err := reserve(mine, "h3/b", time.Hour); err != nil {
		t.Errorf("Reserve after the holder's restart = %v, want it taken", err)
	}
}

// testRunModelCalls: a model's answer is kept by run, attempt and key; the first answer of a key
// stays; another attempt's calls are apart; a run's deletion takes them; an unknown run has none.
func testRunModelCalls(t *testing.T, open Opener) {
	ctx := context.Background()
	d := open(t)
	u := NewUser(t, d, "")
	r := newRun(t, d, u.ID, "content_plan_workflow")
	if _, err := d.GetModelCall(ctx, store.ModelCallKey{RunID: r.ID, Attempt: 1, Key: "k#1"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetModelCall before any = %v, want ErrNotFound", err)
	}
	for _, answer := range []string{`{"text":"first"}`, `{"text":"second"}`} {
		if err := d.PutModelCall(ctx, store.ModelCallKey{RunID: r.ID, Attempt: 1, Key: "k#1"}, json.RawMessage(answer)); err != nil {
			t.Fatalf("PutModelCall: %v", err)
		}
	}
	got, err := d.GetModelCall(ctx, store.ModelCallKey{RunID: r.ID, Attempt: 1, Key: "k#1"})
	if err != nil || !strings.Contains(string(got), "first") {
		t.Errorf("GetModelCall = %s, %v; want the first answer", got, err)
	}
	if _, err := d.GetModelCall(ctx, store.ModelCallKey{RunID: r.ID, Attempt: 2, Key: "k#1"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetModelCall of attempt 2 = %v, want ErrNotFound: an attempt asks the model afresh", err)
	}
	if err := d.PutModelCall(ctx, store.ModelCallKey{RunID: uuid.NewString(), Attempt: 1, Key: "k#1"}, json.RawMessage(`{}`)); err == nil {
		t.Errorf("PutModelCall of an unknown run = nil, want an error")
	}
	if _, err := d.UpdateRun(ctx, r.ID, store.RunUpdate{From: []string{store.RunPending}, Status: store.RunCompleted}); err != nil {
		t.Fatal(err)
	}
	if err := d.DeleteRun(ctx, r.ID, u.ID); err != nil {
		t.Fatalf("DeleteRun: %v", err)
	}
	if _, err := d.GetModelCall(ctx, store.ModelCallKey{RunID: r.ID, Attempt: 1, Key: "k#1"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetModelCall after DeleteRun = %v, want ErrNotFound", err)
	}
}

// testRunModelCallsInProgress: a model call begun under a claim is held by it: another claim of
// the run (after a takeover) finds it held, then reads its answer once recorded; a call whose hold
// ran out by the clock is taken over; a released one is free at once; only the run's claim may
// begin a call; a host's previous life's calls go with TakeBackRuns.
func testRunModelCallsInProgress(t *testing.T, open Opener) {
	ctx := context.Background()
	d := open(t)
	u := NewUser(t, d, "")
	r := newRun(t, d, u.ID, "content_plan_workflow")
	const lease = 3 * time.Second
	// takeOver hands the run to claim owner, as a ClaimRun after the previous claim's lease ran out.
	takeOver := func(owner string) {
		t.Helper()
		past := d.Now().Add(-time.Minute)
		if _, err := d.UpdateRun(ctx, r.ID, store.RunUpdate{From: []string{store.RunPending}, Status: store.RunPending, Lease: &past}); err != nil {
			t.Fatal(err)
		}
		if c, err := d.ClaimRun(ctx, owner, lease); err != nil || c.ID != r.ID {
			t.Fatalf("ClaimRun(%s) = %+v, %v", owner, c, err)
		}
	}
	call := func(owner, key string) store.ModelCall {
		return store.ModelCall{ModelCallKey: store.ModelCallKey{RunID: r.ID, Attempt: 1, Key: key}, Owner: owner}
	}
	begin := func(c store.ModelCall, l time.Duration) store.ModelCallState {
		t.Helper()
		st, err := d.BeginModelCall(ctx, c, l)
		if err != nil {
			t.Fatalf("BeginModelCall(%s, %s) = %v", c.Owner, c.Key, err)
		}
		return st
	}
	takeOver("ha/1")
	if st := begin(call("ha/1", "k#1"), lease); st.HeldBy != "" || st.Answer != nil {
		t.Fatalf("first BeginModelCall = %+v, want the call the asker's", st)
	}
	if _, err := d.BeginModelCall(ctx, call("hb/1", "k#1"), lease); !errors.Is(err, store.ErrStale) {
		t.Errorf("BeginModelCall of a claim not the run's = %v, want ErrStale", err)
	}
	if _, err := d.GetModelCall(ctx, call("", "k#1").ModelCallKey); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetModelCall of a call in progress = %v, want ErrNotFound", err)
	}
	takeOver("hb/1")
	if st := begin(call("hb/1", "k#1"), lease); st.HeldBy != "ha/1" {
		t.Errorf("BeginModelCall after the takeover = %+v, want the call held by ha/1", st)
	}
	if err := d.PutModelCall(ctx, call("", "k#1").ModelCallKey, json.RawMessage(`{"text":"ha's"}`)); err != nil {
		t.Fatalf("PutModelCall: %v", err)
	}
	if st := begin(call("hb/1", "k#1"), lease); !strings.Contains(string(st.Answer), "ha's") || st.HeldBy != "" {
		t.Errorf("BeginModelCall once answered = %+v, want ha's answer", st)
	}

	// A release by another claim frees nothing; the holder's frees the call at once.
	begin(call("hb/1", "k#2"), lease)
	takeOver("hc/1")
	if err := d.ReleaseModelCall(ctx, call("hc/1", "k#2")); err != nil {
		t.Fatal(err)
	}
	if st := begin(call("hc/1", "k#2"), lease); st.HeldBy != "hb/1" {
		t.Errorf("BeginModelCall after another's release = %+v, want held by hb/1", st)
	}
	if err := d.ReleaseModelCall(ctx, call("hb/1", "k#2")); err != nil {
		t.Fatal(err)
	}
	if st := begin(call("hc/1", "k#2"), lease); st.HeldBy != "" || st.Answer != nil {
		t.Errorf("BeginModelCall after the holder's release = %+v, want the call the asker's", st)
	}

	// A hold runs out by the clock (a short lease here) and the call is taken over.
	begin(call("hc/1", "k#3"), 50*time.Millisecond)
	takeOver("hd/1")
	testtool.Eventually(t, time.Minute, "the hold of hc/1's call runs out", func() bool {
		return begin(call("hd/1", "k#3"), lease).HeldBy == ""
	})

	// A host's restart takes back its previous life's calls with its runs.
	begin(call("hd/1", "k#4"), lease)
	if _, err := d.TakeBackRuns(ctx, "hd"); err != nil {
		t.Fatal(err)
	}
	takeOver("he/1")
	if st := begin(call("he/1", "k#4"), lease); st.HeldBy != "" || st.Answer != nil {
		t.Errorf("BeginModelCall after TakeBackRuns = %+v, want the call the asker's", st)
	}
}
