package runs_test

import (
	"context"
	"testing"
	"time"

	"github.com/reelforge/reelforge/host/runs"
	"github.com/reelforge/reelforge/host/store"
)

// A drained executor lets a run awaiting its job finish within the grace, and hands back one
// that cannot: its lease ended and its claim cleared, so the next executor takes it at once and
// not as a recovery.
func TestDrainFinishesOrHandsBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openStore(t)
	p := newUser(t, st)
	s := newService(t, runs.Deps{Store: st, Manifests: testRegistry(t, renderManifest()),
		Jobs: func(s *runs.Service) runs.JobDispatcher { return &localDispatcher{s: s} }}, // the render never ends
		runs.Options{Lease: time.Hour})
	s.StartExecutor(ctx)
	r, err := s.Start(ctx, runs.StartParams{Workflow: "render", User: p, Inputs: map[string]any{"topic": "tea"}})
	if err != nil {
		t.Fatal(err)
	}
	waitJob(t, st, r.ID)
	s.DrainExecutor(50 * time.Millisecond)
	got, err := st.GetRun(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != store.RunRunning || got.ClaimedBy != "" || got.LeaseUntil == nil || got.LeaseUntil.After(time.Now()) {
		t.Fatalf("run after the drain = %s claimed by %q until %v; want running, handed back", got.Status, got.ClaimedBy, got.LeaseUntil)
	}
	c, err := st.ClaimRun(ctx, "next/1", time.Minute)
	if err != nil || c.ID != r.ID || c.Recoveries != 0 {
		t.Fatalf("ClaimRun after the drain = %+v, %v; want the run, not counted as a recovery", c, err)
	}
}
