// Package lease keeps the leases a host holds in the store (claimed runs, jobs it works on,
// documents it ingests, Idempotency-Keys of requests it serves): each is held until a time and
// renewed while the host lives, so another host takes over what a dead one held once its leases
// run out.
package lease

import (
	"context"
	"time"

	"github.com/reelforge/reelforge/internal/tick"
)

// Every is how often a lease of length d is renewed: three times a lease, so that two renewals
// in a row may fail (a slow database) before the lease runs out.
func Every(d time.Duration) time.Duration { return d / 3 }

// Keep calls renew every Every(d) until ctx ends or renew answers false (the lease is lost: it was
// taken over, or what it held is gone). It blocks; run it in a goroutine of its own.
func Keep(ctx context.Context, d time.Duration, renew func(ctx context.Context) bool) {
	tick.Every(ctx, Every(d), renew)
}
