package runs_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reelforge/reelforge/host/runs"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/internal/testtool"
)

// downClaims is a store whose run claims fail while down is set, as when the database is down.
type downClaims struct {
	store.Driver
	down   atomic.Bool
	claims atomic.Int32
}

func (d *downClaims) ClaimRun(ctx context.Context, owner string, lease time.Duration) (*store.Run, error) {
	d.claims.Add(1)
	if d.down.Load() {
		return nil, &store.Fault{Cause: store.CauseUnreachable, Err: errors.New("connection refused")}
	}
	return d.Driver.ClaimRun(ctx, owner, lease)
}

// TestRunStartedAfterAnOutageIsClaimedAtOnce: the executor's claims back off while the database
// fails (their wait grows to seconds), and a run started once it is back is claimed at once, not
// after the back-off.
func TestRunStartedAfterAnOutageIsClaimedAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := &downClaims{Driver: openStore(t)}
	st.down.Store(true)
	s := newService(t, runs.Deps{Store: st, Manifests: registry(t)}, runs.Options{})
	s.StartExecutor(ctx)
	defer s.StopExecutor()
	// Six failed claims: the back-off is now 4 to 8 s (from 0.25 s, doubling).
	testtool.Eventually(t, time.Minute, "six failed claims", func() bool { return st.claims.Load() >= 6 })
	st.down.Store(false)
	r, err := s.Start(ctx, runs.StartParams{Workflow: "content_plan_workflow", User: newUser(t, st), Inputs: map[string]any{"topic": "tea"}})
	if err != nil {
		t.Fatal(err)
	}
	// Within less than the shortest back-off left: the start's wake cut the wait short.
	testtool.Eventually(t, 3*time.Second, "the run claimed", func() bool {
		got, err := st.GetRun(ctx, r.ID)
		return err == nil && got.Status != store.RunPending
	})
}
