package runs

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/sqlitestore"
	"github.com/reelforge/reelforge/host/store/storetest"
	"github.com/reelforge/reelforge/sdk/engine"
)

// TestFailJobsFenced: the jobs an execution fails (it degrades to the node engine) are failed only
// while the run is still claimed by it: an execution whose run was taken over cannot fail the jobs
// of the step its new owner executes.
func TestFailJobsFenced(t *testing.T) {
	ctx := context.Background()
	st, r := claimedRun(t, "h/new")
	j := &store.Job{ID: uuid.NewString(), RunID: r.ID, StepID: "s", Type: engine.JobGraph, TimeoutAt: time.Now().Add(time.Hour)}
	if err := st.CreateJob(ctx, j); err != nil {
		t.Fatal(err)
	}
	s := New(Deps{Store: st}, Options{})
	e := &engine.RunError{Code: "EXTERNAL_SERVICE_ERROR", Message: "the run degraded"}
	if ids := s.failJobs(ctx, jobFailure{RunID: r.ID, Owner: "h/old", Err: e}); len(ids) != 0 {
		t.Errorf("failJobs under a claim taken over failed %v, want none", ids)
	}
	if got, _ := st.GetJob(ctx, j.ID); got.Resolved() {
		t.Fatalf("the job was resolved (%s) by an execution that lost its run", got.Status)
	}
	if ids := s.failJobs(ctx, jobFailure{RunID: r.ID, Owner: "h/new", Err: e}); len(ids) != 1 {
		t.Errorf("failJobs under the run's claim failed %v, want the job", ids)
	}
	if got, _ := st.GetJob(ctx, j.ID); got.Status != engine.JobFailed {
		t.Errorf("job %s, want failed by the run's claim", got.Status)
	}
}

// claimedRun is a run of a new user in a new SQLite store, claimed by owner (still pending).
func claimedRun(t *testing.T, owner string) (*sqlitestore.Driver, *store.Run) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "db.sqlite"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	u := storetest.NewUser(t, st, store.RoleUser)
	r := &store.Run{ID: uuid.NewString(), WorkflowID: "w", UserID: u.ID, Inputs: json.RawMessage(`{}`)}
	if err := st.CreateRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ClaimRun(ctx, owner, time.Minute); err != nil {
		t.Fatal(err)
	}
	return st, r
}
