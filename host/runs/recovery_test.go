package runs_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/manifest"
	"github.com/reelforge/reelforge/host/runs"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/internal/testtool"
	"github.com/reelforge/reelforge/sdk/engine"
)

// renderManifest writes a script and renders it (a generator job the step awaits).
func renderManifest() *manifest.Manifest {
	return &manifest.Manifest{ID: "render", Name: "render", Version: "1", Engine: "node", Fallback: "node", Timeout: time.Hour,
		Steps: []engine.Step{
			{ID: "write", Name: "Write", Agent: "script_writer"},
			{ID: "render", Name: "Render", Agent: "generator", DependsOn: []string{"write"}, With: json.RawMessage(`{"job_type":"videogen"}`)},
		}}
}

// quickManifest has one step and awaits nothing.
func quickManifest() *manifest.Manifest {
	return &manifest.Manifest{ID: "quick", Name: "quick", Version: "1", Engine: "node", Fallback: "node", Timeout: time.Hour,
		Steps: []engine.Step{{ID: "write", Name: "Write", Agent: "script_writer"}}}
}

// localDispatcher works on its jobs in this process (Local): it completes them at once when
// complete is set, else keeps them in flight for ever, like a render that is still going.
type localDispatcher struct {
	s        *runs.Service
	complete bool
	local    bool
	mu       sync.Mutex
	got      []string
}

func (d *localDispatcher) Local(string) bool { return d.local }

func (d *localDispatcher) Dispatch(_ context.Context, job *engine.Job, _ string) error {
	d.mu.Lock()
	d.got = append(d.got, job.JobID)
	d.mu.Unlock()
	if d.complete {
		go func() {
			_ = d.s.CompleteJob(context.Background(), job.JobID, json.RawMessage(`{"video_url":"/api/assets/files/u/v.mp4"}`), nil)
		}()
	}
	return nil
}

// A host that restarts takes back its previous life's work at once, long before the leases run
// out: the run is executed again from its completed step, the render its previous life was doing
// is failed as interrupted (no callback can come), and the step orders the render anew.
func TestRestartTakesBackItsOwnWorkAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openStore(t)
	p := newUser(t, st)
	r := &store.Run{ID: uuid.NewString(), WorkflowID: "render", UserID: p.UserID, Inputs: json.RawMessage(`{"topic":"tea"}`),
		UserContext: json.RawMessage(`{"user_id":"` + p.UserID + `"}`)}
	if err := st.CreateRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	// The previous life of host h1 claimed the run for an hour and was rendering when it died.
	if _, err := st.ClaimRun(ctx, "h1/claim", time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := st.UpdateRun(ctx, r.ID, store.RunUpdate{From: []string{store.RunPending}, Status: store.RunRunning, Started: true}); err != nil {
		t.Fatal(err)
	}
	done := json.RawMessage(`{"step_id":"write","step_name":"Write","agent":"script_writer","status":"completed","inputs":{},"outputs":{"script":"a script about tea","marker":"previous-life"}}`)
	if err := st.UpsertTraceStep(ctx, &store.TraceStep{RunID: r.ID, StepID: "write", Status: "completed", Step: done}); err != nil {
		t.Fatal(err)
	}
	old := &store.Job{ID: uuid.NewString(), RunID: r.ID, StepID: "render", Type: engine.JobVideogen, Request: json.RawMessage(`{}`),
		MaxRetries: 0, TimeoutAt: time.Now().Add(time.Hour)}
	if err := st.CreateJob(ctx, old); err != nil {
		t.Fatal(err)
	}
	if err := st.MarkJobDispatched(ctx, store.DispatchJobParams{ID: old.ID, Holder: "h1/previous-life", Lease: time.Hour}); err != nil {
		t.Fatal(err)
	}

	s := newService(t, runs.Deps{Store: st, Manifests: testRegistry(t, renderManifest()),
		Jobs: func(s *runs.Service) runs.JobDispatcher { return &localDispatcher{s: s, complete: true, local: true} }},
		runs.Options{HostID: "h1", Lease: time.Hour})
	s.StartExecutor(ctx)
	t.Cleanup(s.StopExecutor)

	got := waitStatus(t, st, r.ID, store.RunCompleted, store.RunFailed)
	if got.Status != store.RunCompleted || got.Recoveries != 1 {
		t.Fatalf("run = %s after %d recoveries (error %s), want completed after 1", got.Status, got.Recoveries, got.Error)
	}
	oj, err := st.GetJob(ctx, old.ID)
	if err != nil {
		t.Fatal(err)
	}
	if oj.Status != engine.JobFailed || !strings.Contains(string(oj.Error), "interrupted") {
		t.Errorf("the previous life's render = %s %s, want failed as interrupted", oj.Status, oj.Error)
	}
	jobs, _ := st.ListRunJobs(ctx, r.ID)
	if len(jobs) != 2 || jobs[1].Status != engine.JobCompleted || jobs[1].HeldBy == "" {
		t.Errorf("jobs = %+v, want the interrupted one and a new completed one held by this host", jobs)
	}
	steps, _ := st.ListTraceSteps(ctx, r.ID)
	if len(steps) == 0 || string(steps[0].Step) != string(done) {
		t.Errorf("trace after the take-back starts with %s, want the completed step kept", steps[0].Step)
	}
}

// Runs awaiting jobs hold no executor slot: with one slot and three runs awaiting renders that
// never end, a run started afterwards still executes and completes.
func TestAwaitingRunsDoNotHoldSlots(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openStore(t)
	p := newUser(t, st)
	s := newService(t, runs.Deps{Store: st, Manifests: testRegistry(t, renderManifest(), quickManifest()),
		Jobs: func(s *runs.Service) runs.JobDispatcher { return &localDispatcher{s: s} }}, runs.Options{Workers: 1})
	s.StartExecutor(ctx)
	t.Cleanup(s.StopExecutor)

	for range 3 {
		r, err := s.Start(ctx, runs.StartParams{Workflow: "render", User: p, Inputs: map[string]any{"topic": "tea"}})
		if err != nil {
			t.Fatal(err)
		}
		waitJob(t, st, r.ID)
	}
	q, err := s.Start(ctx, runs.StartParams{Workflow: "quick", User: p, Inputs: map[string]any{"topic": "tea"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := waitStatus(t, st, q.ID, store.RunCompleted, store.RunFailed); got.Status != store.RunCompleted {
		t.Fatalf("quick run = %s (%s), want completed", got.Status, got.Error)
	}
}

// waitJob waits until run id has a job in flight.
func waitJob(t *testing.T, st store.Driver, id string) {
	t.Helper()
	testtool.Eventually(t, 15*time.Second, "run "+id+" to order a job", func() bool {
		jobs, _ := st.ListRunJobs(context.Background(), id)
		return len(jobs) > 0
	})
}
