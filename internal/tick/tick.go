// Package tick calls a function at a fixed interval until its context ends: the loop of the
// leases' renewal (internal/lease), the pool's shrinker (host/store/pgstore), and the tickers of
// the host's polling loops (run claims, the task worker).
//
// Every tick comes at a random phase of its interval: loops of one host started in the same
// instant with the same interval (or multiples: 0.5 s, 1 s) would otherwise poll the database in
// the same millisecond for ever, each on a connection of its own, and an idle host would keep
// that many connections open (issue 38, "Start and shrink"). Out of phase, they take turns on one.
package tick

import (
	"context"
	"math/rand/v2"
	"time"
)

// Every calls f every d, the first time at a random moment within d from now (never later than
// d, so a lease's first renewal is never late), until ctx ends or f answers false. It blocks;
// run it in a goroutine of its own.
func Every(ctx context.Context, d time.Duration, f func(ctx context.Context) bool) {
	t := NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if !f(ctx) {
				return
			}
		}
	}
}

// Ticker is a time.Ticker whose first tick comes at a random moment within d, and then every d.
type Ticker struct {
	// C delivers the ticks; like time.Ticker's, it drops ticks for a slow reader.
	C    <-chan time.Time
	stop chan struct{}
}

// NewTicker starts a Ticker of interval d (d > 0). Stop it when done.
func NewTicker(d time.Duration) *Ticker {
	c := make(chan time.Time, 1)
	t := &Ticker{C: c, stop: make(chan struct{})}
	go func() {
		first := time.NewTimer(rand.N(d) + 1)
		defer first.Stop()
		var every <-chan time.Time
		for {
			var now time.Time
			select {
			case <-t.stop:
				return
			case now = <-first.C:
				tk := time.NewTicker(d)
				defer tk.Stop()
				every = tk.C
			case now = <-every:
			}
			select {
			case c <- now:
			default:
			}
		}
	}()
	return t
}

// Stop ends the ticks.
func (t *Ticker) Stop() { close(t.stop) }
