package runs

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/sdk/engine"
)

// seenAtRecording is an AssetRecorder that notes, each time it is asked to record files, how the
// store shows the run and its job at that moment: what any reader (a waiter's poll, another host,
// the result route) would see while the files are not yet assets.
type seenAtRecording struct {
	st    store.Driver
	jobID string
	seen  []string // "<run status>/<job status>" per call
}

func (r *seenAtRecording) RecordRunFiles(ctx context.Context, run *store.Run, _ json.RawMessage) ([]store.Asset, error) {
	cur, err := r.st.GetRun(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	j, err := r.st.GetJob(ctx, r.jobID)
	if err != nil {
		return nil, err
	}
	r.seen = append(r.seen, cur.Status+"/"+j.Status)
	return nil, nil
}

// TestFilesRecordedBeforeResolution: a completed job's files, and a completed run's, are recorded
// before the store shows the job resolved or the run completed. A reader that sees either may name
// the files at once (a waiter's poll goes on to the next step; a run's result drops a file that is
// no asset), so recording them after left a caption file out of a finished run's result.
func TestFilesRecordedBeforeResolution(t *testing.T) {
	ctx := context.Background()
	st, r := claimedRun(t, "h/1")
	if _, err := st.UpdateRun(ctx, r.ID, store.RunUpdate{From: []string{store.RunPending}, Status: store.RunRunning, Owner: "h/1", Started: true}); err != nil {
		t.Fatal(err)
	}
	j := &store.Job{ID: uuid.NewString(), RunID: r.ID, StepID: "s", Type: engine.JobVideogen, TimeoutAt: time.Now().Add(time.Hour)}
	if err := st.CreateJob(ctx, j); err != nil {
		t.Fatal(err)
	}
	rec := &seenAtRecording{st: st, jobID: j.ID}
	s := New(Deps{Store: st, Assets: rec}, Options{})
	files := map[string]any{"video_url": "/api/assets/files/" + r.UserID + "/video/j.mp4", "captions_vtt_url": "/api/assets/files/" + r.UserID + "/captions/j.vtt"}
	result, _ := json.Marshal(files)

	open, err := st.GetJob(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.resolve(ctx, j.ID, engine.JobCompleted, result, nil); !ok {
		t.Fatal("the job was not resolved")
	}
	s.apply(ctx, r.ID, "h/1", &engine.RunResult{Status: engine.StatusCompleted, Outputs: map[string]any{"render": files}})
	// The job's files while it is still open; the run's while it is still running.
	want := []string{store.RunRunning + "/" + open.Status, store.RunRunning + "/" + engine.JobCompleted}
	if !slices.Equal(rec.seen, want) {
		t.Errorf("run/job as the store showed them while the files were recorded = %v; want %v", rec.seen, want)
	}
	if got, _ := st.GetRun(ctx, r.ID); got.Status != store.RunCompleted {
		t.Errorf("run %s, want completed", got.Status)
	}
}
