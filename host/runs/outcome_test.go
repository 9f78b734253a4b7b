package runs_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/events"
	"github.com/reelforge/reelforge/host/manifest"
	"github.com/reelforge/reelforge/host/runs"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/internal/testtool"
	"github.com/reelforge/reelforge/sdk/engine"
)

// TestRunWithoutItsProductFails: a voiceover_video run whose generator steps are skipped (no
// executor takes their jobs) does not complete with the script alone: it fails with the error of
// the step that should have made its product, on both databases, and its failed task:status frame
// carries that error. Retried, it goes back to pending from that step.
func TestRunWithoutItsProductFails(t *testing.T) {
	t.Parallel()
	for name, open := range databases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := open(t)
			rec := &frameRecorder{}
			s := newService(t, runs.Deps{Store: st, Manifests: registry(t), Notifier: rec}, runs.Options{})
			s.StartExecutor(ctx)
			defer s.StopExecutor()
			p := newUser(t, st)
			r, err := s.Start(ctx, runs.StartParams{Workflow: "voiceover_video", User: p, Inputs: map[string]any{"topic": "coffee"}})
			if err != nil {
				t.Fatal(err)
			}
			got := waitStatus(t, st, r.ID, store.RunCompleted, store.RunFailed)
			var e engine.RunError
			_ = json.Unmarshal(got.Error, &e)
			if got.Status != store.RunFailed || e.Code != "EXTERNAL_SERVICE_ERROR" && e.Code != "VIDEO_GEN_ERROR" ||
				e.StepID != "speech" || !strings.Contains(e.Message, "no executor") {
				t.Fatalf("run without generators = %s %s; want failed with the speech step's error", got.Status, got.Error)
			}
			// The frame is sent after the status is stored: it may come a moment after.
			var frame map[string]any
			testtool.Within(10*time.Second, func() bool {
				rec.mu.Lock()
				defer rec.mu.Unlock()
				for _, f := range rec.frames {
					if f.Type == events.FrameTaskStatus && f.Data["runId"] == r.ID && f.Data["status"] == store.RunFailed {
						frame = f.Data
					}
				}
				return frame != nil
			})
			b, _ := json.Marshal(frame)
			var fe struct {
				Error engine.RunError `json:"error"`
			}
			if json.Unmarshal(b, &fe) != nil || fe.Error.Code != e.Code || fe.Error.Message != e.Message {
				t.Errorf("failed task:status frame = %s; want the run's error %+v", b, e)
			}
			// The outbound job.failed of the job behind it says the same: its code, its message.
			evs, err := st.ClaimOutboxEvents(ctx, &store.ClaimOutboxParams{Limit: 1000, Token: uuid.NewString(),
				Lease: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			agree := false
			for _, ev := range evs {
				var pl events.Payload
				_ = json.Unmarshal(ev.Payload, &pl)
				je, _ := pl.Data["error"].(map[string]any)
				msg, _ := je["message"].(string)
				agree = agree || (ev.Event == events.JobFailed && pl.Data["runId"] == r.ID && je["code"] == e.Code &&
					msg != "" && strings.Contains(e.Message, msg))
			}
			if !agree {
				t.Errorf("no job.failed event of run %s carries its error's code %s and message", r.ID, e.Code)
			}
			again, err := s.Retry(ctx, p, r.ID)
			if err != nil || again.Status != store.RunPending {
				t.Errorf("retry of the failed run = %v, %v; want pending", again, err)
			}
		})
	}
}

// TestCompletedRunWarns: a run that completes with an optional step skipped for an error and an
// input its workflow does not declare carries both as warnings in its outputs and its
// completed task:status frame.
func TestCompletedRunWarns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openStore(t)
	rec := &frameRecorder{}
	s := newService(t, runs.Deps{Store: st, Manifests: registry(t), Notifier: rec}, runs.Options{})
	s.StartExecutor(ctx)
	defer s.StopExecutor()
	r, err := s.Start(ctx, runs.StartParams{Workflow: "content_repurposing", User: newUser(t, st),
		Inputs: map[string]any{"url": "https://example.com/v/1", "content": "Coffee, three ways.", "colour": "red"}})
	if err != nil {
		t.Fatal(err)
	}
	got := waitStatus(t, st, r.ID, store.RunCompleted, store.RunFailed)
	if got.Status != store.RunCompleted {
		t.Fatalf("run = %s %s, want completed", got.Status, got.Error)
	}
	var out struct {
		Warnings []runs.Warning `json:"warnings"`
	}
	if err := json.Unmarshal(got.Outputs, &out); err != nil {
		t.Fatal(err)
	}
	var step, input bool
	for _, w := range out.Warnings {
		step = step || (w.StepID == "parse_link" && w.Code != "" && strings.Contains(w.Message, "skipped"))
		input = input || (w.Input == "colour" && strings.Contains(w.Message, "ignored"))
	}
	if !step || !input {
		t.Errorf("warnings = %+v; want the skipped parse_link step and the ignored input colour", out.Warnings)
	}
	if w := runs.WarningsOf(got); w == nil {
		t.Error("WarningsOf the completed run = nil")
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, f := range rec.frames {
		if f.Type == events.FrameTaskStatus && f.Data["runId"] == r.ID && f.Data["status"] == store.RunCompleted && f.Data["warnings"] == nil {
			t.Errorf("completed task:status frame %v carries no warnings", f.Data)
		}
	}
}

// The input a paused run was resumed with answers the step that asked (a human step, a graph's
// interrupt): its keys are used, so they are not warned of as ignored inputs; a key the workflow
// does not declare and no resume gave still is.
func TestResumeInputIsNotAnIgnoredInput(t *testing.T) {
	t.Parallel()
	m := &manifest.Manifest{ID: "live", Inputs: []manifest.Field{{Name: "topic", Type: manifest.TypeString}}}
	got := runs.IgnoredInputs(m, json.RawMessage(`{"topic":"matcha","colour":"red","approver":"Mia"}`), json.RawMessage(`{"approver":"Mia"}`))
	if len(got) != 1 || got[0].Input != "colour" {
		t.Errorf("IgnoredInputs = %+v; want colour only (approver answered the run's pause)", got)
	}
}
