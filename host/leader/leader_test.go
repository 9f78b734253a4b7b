package leader_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reelforge/reelforge/host/leader"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/internal/testtool"
)

// flakyLocks is a Store whose lock attempts fail while down is set (the database down) and
// succeed otherwise.
type flakyLocks struct {
	down     atomic.Bool
	attempts atomic.Int32
}

type heldLock struct{}

func (heldLock) Check(context.Context) error { return nil }
func (heldLock) Release()                    {}

func (f *flakyLocks) TryLeaderLock(context.Context, string) (store.LeaderLock, bool, error) {
	f.attempts.Add(1)
	if f.down.Load() {
		return nil, false, errors.New("connection refused")
	}
	return heldLock{}, true, nil
}

// TestAttemptsBackOff: callers that ask IsLeader in a tight loop while the database fails make
// one attempt per back-off step, not one per call; once it is back, the lock is taken.
func TestAttemptsBackOff(t *testing.T) {
	t.Parallel()
	st := &flakyLocks{}
	st.down.Store(true)
	l := leader.New(st, "test", nil)
	began := time.Now()
	for range 1000 {
		if l.IsLeader(context.Background()) {
			t.Fatal("leader while the database fails")
		}
	}
	// Each back-off step is at least 0.125 s: at most one attempt per 0.125 s the calls took
	// (one in all on any machine but a very slow one).
	if n, most := st.attempts.Load(), 1+int32(time.Since(began)/(125*time.Millisecond)); n > most {
		t.Errorf("1000 calls made %d attempts at the lock, want at most %d (1 per back-off step)", n, most)
	}
	st.down.Store(false)
	testtool.Eventually(t, 10*time.Second, "the lock taken once the database is back", func() bool {
		return l.IsLeader(context.Background())
	})
}
