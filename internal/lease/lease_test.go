package lease_test

import (
	"context"
	"errors"
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

// Hold returns ErrExpired once renewals have failed for a whole lease, after the failing renewals
// were each cut at the lease's end; it keeps the lease while renewals succeed; it returns what
// renew gave when the lease was lost.
func TestHold(t *testing.T) {
	t.Parallel()
	const d = 300 * time.Millisecond
	var calls atomic.Int32
	start := time.Now()
	err := lease.Hold(context.Background(), d, start, func(ctx context.Context) (bool, error) {
		calls.Add(1)
		<-ctx.Done() // a database that hangs: the renewal ends at the lease's safe end
		return true, ctx.Err()
	})
	if !errors.Is(err, lease.ErrExpired) {
		t.Fatalf("Hold with renewals that hang = %v, want ErrExpired", err)
	}
	if el := time.Since(start); el < lease.Safe(d) {
		t.Errorf("Hold gave up after %s, before the lease's safe end %s", el, lease.Safe(d))
	}
	if calls.Load() < 1 {
		t.Error("no renewal was tried")
	}

	// Renewals that succeed keep it past several leases; the context's end returns nil.
	ctx, cancel := context.WithCancel(context.Background())
	var ok atomic.Int32
	done := make(chan error, 1)
	go func() {
		done <- lease.Hold(ctx, 30*time.Millisecond, time.Now(), func(context.Context) (bool, error) {
			if ok.Add(1) == 12 {
				cancel()
			}
			return true, nil
		})
	}()
	if err := <-done; err != nil {
		t.Errorf("Hold with good renewals = %v after %d renewals, want nil when its context ended", err, ok.Load())
	}

	// A lost lease returns renew's error.
	stale := errors.New("stale")
	if err := lease.Hold(context.Background(), 30*time.Millisecond, time.Now(), func(context.Context) (bool, error) {
		return false, stale
	}); !errors.Is(err, stale) {
		t.Errorf("Hold of a lost lease = %v, want renew's error", err)
	}
}
