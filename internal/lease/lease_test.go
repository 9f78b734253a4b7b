package lease_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reelforge/reelforge/internal/lease"
)

// Keep renews until renew answers false, and returns when its context ends.
func TestKeep(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		lease.Keep(context.Background(), 3*time.Millisecond, func(context.Context) bool { return n.Add(1) < 3 })
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Keep did not return after renew answered false")
	}
	if got := n.Load(); got != 3 {
		t.Errorf("renewals = %d, want 3 (the third answered false)", got)
	}

	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		lease.Keep(ctx, time.Hour, func(context.Context) bool { t.Error("renewed before its time"); return true })
	}()
	cancel()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Keep did not return when its context ended")
	}
}
