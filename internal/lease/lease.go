// Package lease keeps the leases a host holds in the store (claimed runs, jobs it works on,
// documents it ingests, Idempotency-Keys of requests it serves): each is held until a time and
// renewed while the host lives, so another host takes over what a dead one held once its leases
// run out.
package lease

import (
	"context"
	"errors"
	"time"

	"github.com/reelforge/reelforge/internal/tick"
)

// Every is how often a lease of length d is renewed: three times a lease, so that two renewals
// in a row may fail (a slow database) before the lease runs out.
func Every(d time.Duration) time.Duration { return d / 3 }

// Keep calls renew every Every(d) until ctx ends or renew answers false (the lease is lost: it was
// taken over, or what it held is gone). It blocks; run it in a goroutine of its own. It suits
// holds whose lapse another host notices and settles (a job, a document, an Idempotency-Key):
// the holder goes on renewing through failures. Work that must stop before another host may
// start it again (a run) is held with Hold.
func Keep(ctx context.Context, d time.Duration, renew func(ctx context.Context) bool) {
	tick.Every(ctx, Every(d), renew)
}

// ErrExpired is Hold's answer when renewals failed for a whole lease: another host may take the
// work over from now on, so the holder must have stopped.
var ErrExpired = errors.New("lease: not renewed for a whole lease (the database did not answer in time): another host may take the work over")

// Safe is how long a lease of length d made at a time t is the holder's for sure, measured by the
// holder's own clock from just before it sent the statement that made the lease (which set it from
// the database's clock at some later moment): d less a tenth, kept for the holder to stop its work.
func Safe(d time.Duration) time.Duration { return d - d/10 }

// Hold renews a lease of length d, made by a statement sent at since (the holder's clock, taken
// before sending), every Every(d) until ctx ends (nil), renew reports the lease lost (held false:
// ErrStale and the like; Hold answers err, or ErrExpired when err is nil), or renewals have failed
// until Safe(d) after the last one that succeeded was sent (ErrExpired). Every renewal runs with a
// deadline at that moment, so a database that hangs cannot keep the holder working past its lease.
// The caller stops the work when Hold returns anything but nil with ctx live. It blocks.
func Hold(ctx context.Context, d time.Duration, since time.Time, renew func(ctx context.Context) (held bool, err error)) error {
	t := time.NewTicker(Every(d))
	defer t.Stop()
	until := since.Add(Safe(d))
	expired := time.NewTimer(time.Until(until))
	defer expired.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-expired.C:
			return ErrExpired
		case <-t.C:
		}
		sent := time.Now()
		rctx, cancel := context.WithDeadline(ctx, until)
		held, err := renew(rctx)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		if !held {
			if err == nil {
				err = ErrExpired
			}
			return err
		}
		if err != nil {
			continue // tried again at the next tick, while the lease lasts
		}
		until = sent.Add(Safe(d))
		expired.Reset(time.Until(until))
	}
}
