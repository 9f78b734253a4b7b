package runs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/events"
	"github.com/reelforge/reelforge/host/runs"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/sdk/engine"
)

// outboxCounts counts the stored events of jobID by name, checking each names the owner.
func outboxCounts(t *testing.T, st store.Driver, jobID, userID, projectID string) map[string]int {
	t.Helper()
	evs, err := st.ClaimOutboxEvents(context.Background(), &store.ClaimOutboxParams{Limit: 1000, Token: uuid.NewString(),
		Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, e := range evs {
		var p events.Payload
		if err := json.Unmarshal(e.Payload, &p); err != nil {
			t.Fatal(err)
		}
		if p.Data["jobId"] != jobID {
			continue
		}
		got[e.Event]++
		if e.UserID != userID || e.ProjectID != projectID || p.Data["userId"] != userID || p.Data["projectId"] != projectID {
			t.Errorf("%s of job %s names user %q project %q (data %v), want the run's owner %q and project %q",
				e.Event, jobID, e.UserID, e.ProjectID, p.Data, userID, projectID)
		}
	}
	return got
}

// TestJobEndEvents: every end of a run's job emits job.status.changed and exactly one of
// job.completed and job.failed, as an event of the run's owner and project, on each path: an
// executor's callback reporting success or failure, a dispatch no executor takes, and a repeated
// callback (which emits nothing more).
func TestJobEndEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openStore(t)
	s := newService(t, runs.Deps{Store: st, Manifests: testRegistry(t, graphManifest())}, runs.Options{})
	owner := newUser(t, st)
	proj := &store.Project{ID: uuid.NewString(), UserID: owner.UserID, Name: "p"}
	if err := st.CreateProject(ctx, proj); err != nil {
		t.Fatal(err)
	}
	r, err := s.Start(ctx, runs.StartParams{Workflow: "g", User: owner, ProjectID: proj.ID})
	if err != nil {
		t.Fatal(err)
	}
	newJob := func(dispatch bool) string {
		j, err := s.CreateJob(ctx, &engine.JobRequest{RunID: r.ID, StepID: uuid.NewString(), Type: engine.JobMusic,
			Request: json.RawMessage(`{}`), Dispatch: dispatch})
		if err != nil {
			t.Fatal(err)
		}
		return j.JobID
	}
	tests := []struct {
		name string
		end  func(jobID string)
		want map[string]int
	}{
		{"callback completed", func(id string) {
			for range 2 { // the repeat is a duplicate: no second end
				if _, err := s.Callback(ctx, engine.CallbackAI, []byte(`{"job_id":"`+id+`","status":"completed","result":{"audio_url":"x"}}`)); err != nil {
					t.Fatal(err)
				}
			}
		}, map[string]int{events.JobStatusChanged: 2, events.JobCompleted: 1}},
		{"callback failed", func(id string) {
			if _, err := s.Callback(ctx, engine.CallbackAI, []byte(`{"job_id":"`+id+`","status":"failed","error":{"message":"no"}}`)); err != nil {
				t.Fatal(err)
			}
		}, map[string]int{events.JobStatusChanged: 2, events.JobFailed: 1}},
		{"no executor", nil, map[string]int{events.JobStatusChanged: 2, events.JobFailed: 1}},
	}
	for _, tt := range tests {
		var id string
		if tt.end == nil {
			id = newJob(true) // dispatched with no dispatcher: fails at once
		} else {
			id = newJob(false)
			tt.end(id)
		}
		got := outboxCounts(t, st, id, owner.UserID, proj.ID)
		if len(got) != len(tt.want) {
			t.Errorf("%s: events %v, want %v", tt.name, got, tt.want)
		}
		for name, n := range tt.want {
			if got[name] != n {
				t.Errorf("%s: %d %s, want %d (all %v)", tt.name, got[name], name, n, got)
			}
		}
	}
}

// frameRecorder is an events.Notifier that keeps the frames.
type frameRecorder struct {
	mu     sync.Mutex
	frames []events.Frame
}

func (f *frameRecorder) Notify(_ context.Context, fr events.Frame) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.frames = append(f.frames, fr)
}

// TestProgressFramesOncePerChange: a run of the node engine sends task:progress frames whose
// (progress, current_step) changes from each frame to the next: nothing is sent twice (the
// engine's final 100 and the run's completion were two frames).
func TestProgressFramesOncePerChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openStore(t)
	rec := &frameRecorder{}
	s := newService(t, runs.Deps{Store: st, Manifests: registry(t), Notifier: rec}, runs.Options{Workers: 1})
	s.StartExecutor(ctx)
	defer s.StopExecutor()
	r, err := s.Start(ctx, runs.StartParams{Workflow: "content_plan_workflow", User: newUser(t, st), Inputs: map[string]any{"topic": "coffee"}})
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, st, r.ID, store.RunCompleted, store.RunFailed)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var seen []string
	for _, f := range rec.frames {
		if f.Type != events.FrameTaskProgress || f.Data["runId"] != r.ID {
			continue
		}
		// A UI shows these as they are: a whole percentage and the step at work, in every frame.
		if _, whole := f.Data["progress"].(int); !whole || f.Data["current_step"] == "" {
			t.Errorf("task:progress frame %v: want an integer progress and a current step", f.Data)
		}
		key := fmt.Sprint(f.Data["progress"], "|", f.Data["current_step"])
		if len(seen) > 0 && seen[len(seen)-1] == key {
			t.Errorf("task:progress %s sent twice in a row (all: %v)", key, seen)
		}
		seen = append(seen, key)
	}
	if len(seen) < 2 || !strings.HasPrefix(seen[len(seen)-1], "100|") {
		t.Errorf("task:progress frames = %v, want several ending at 100", seen)
	}
}

// TestUndispatchedJobUsesItsCode: a generator job no executor takes fails with the code its
// engine's manifest promises for its type (music: MUSIC_API_ERROR), not a generic one.
func TestUndispatchedJobUsesItsCode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openStore(t)
	s := newService(t, runs.Deps{Store: st, Manifests: registry(t)}, runs.Options{})
	r, err := s.Start(ctx, runs.StartParams{Workflow: "graphic", User: newUser(t, st), Inputs: map[string]any{"topic": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	j, err := s.CreateJob(ctx, &engine.JobRequest{RunID: r.ID, StepID: "compose", Type: engine.JobMusic, Request: json.RawMessage(`{}`), Dispatch: true})
	if err != nil {
		t.Fatal(err)
	}
	got, err := st.GetJob(ctx, j.JobID)
	if err != nil {
		t.Fatal(err)
	}
	var e engine.RunError
	_ = json.Unmarshal(got.Error, &e)
	if got.Status != engine.JobFailed || e.Code != "MUSIC_API_ERROR" {
		t.Errorf("music job without an executor = %s %s, want failed MUSIC_API_ERROR", got.Status, got.Error)
	}
}
