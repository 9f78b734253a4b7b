// Package tick calls a function at a fixed interval until its context ends: the loop of the
// leases' renewal (internal/lease) and of the host's job sweeper (host/runs).
package tick

import (
	"context"
	"time"
)

// Every calls f every d, the first time d from now, until ctx ends or f answers false. It blocks;
// run it in a goroutine of its own.
func Every(ctx context.Context, d time.Duration, f func(ctx context.Context) bool) {
	t := time.NewTicker(d)
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
