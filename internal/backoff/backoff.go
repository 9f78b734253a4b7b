// Package backoff is the one policy by which the host's background loops (the executor's claims,
// the job sweeper, the knowledge indexer, the event outbox, leader election, the scheduler, lease
// renewals) wait after an error: exponential from Min to Max, with jitter so that hosts and loops
// that failed together do not retry together. Its Retry also rations the loop's log: a repeated
// error is logged once per step of the back-off with how many times it happened, not once per
// attempt, so a database that is down or a disk that is full costs a few lines a minute instead
// of tens of thousands (issue 38).
package backoff

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"time"
)

// Policy is how long a loop waits after consecutive failures.
type Policy struct {
	Min time.Duration // after the first failure (before jitter)
	Max time.Duration // the cap
}

// Loops is the policy of the host's background loops: a quarter second after the first failure,
// doubling to half a minute.
var Loops = Policy{Min: 250 * time.Millisecond, Max: 30 * time.Second}

// Wait is how long to wait after the n-th consecutive failure (n >= 1): Min doubled n-1 times,
// capped at Max, then drawn at random from its upper half ("equal jitter": never under half the
// step, so the back-off still grows, and loops that failed together spread out).
func (p Policy) Wait(n int) time.Duration {
	d := p.Min
	for i := 1; i < n && d < p.Max; i++ {
		d *= 2
	}
	d = min(d, p.Max)
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d-d/2)
}

// logEvery bounds the silence of a failure that lasts: once the failures stop doubling in count
// within it, one line this often.
const logEvery = 5 * time.Minute

// episode is how long a loop must go without a failure for its next failure to start a new count
// in the log. A database that fails intermittently (a full SQLite disk lets some writes through)
// has a loop succeed between failures: counted from 1 again after each success, with a line at
// each, such a loop logged its 1st, 2nd and 4th failure and "working again" over and over.
const episode = time.Minute

// Retry is the back-off state of one loop: the failures in a row, and the failures of the current
// episode for its log. It is not safe for concurrent use; each loop has its own.
type Retry struct {
	Policy Policy       // zero: Loops
	Log    *slog.Logger // nil: no log
	What   string       // what the loop was doing, the log line's message ("runs: claim")

	fails    int       // failures in a row: the back-off
	count    int       // failures of the episode: the log
	lastFail time.Time // when the episode's last failure came
	logged   time.Time // when a failure was last logged
	owed     bool      // a failure was logged and its end not yet
}

// Failed records a failure and returns how long to wait before the next attempt. It logs err at
// the 1st, 2nd, 4th, 8th... failure of the episode (and at least every five minutes), with the
// count: an episode lasts until the loop has gone a minute without failing, successes between
// failures included.
func (r *Retry) Failed(err error, attrs ...any) time.Duration {
	now := time.Now()
	r.fails++
	if now.Sub(r.lastFail) >= episode {
		r.count = 0
	}
	r.count++
	r.lastFail = now
	p := r.Policy
	if p == (Policy{}) {
		p = Loops
	}
	wait := p.Wait(r.fails)
	if r.Log != nil && (r.count&(r.count-1) == 0 || now.Sub(r.logged) >= logEvery) {
		r.logged, r.owed = now, true
		r.Log.Warn(r.What, append([]any{"err", err, "failures", r.count, "retry_in", wait.Round(time.Millisecond)}, attrs...)...)
	}
	return wait
}

// Failures is the number of failures in a row so far.
func (r *Retry) Failures() int { return r.fails }

// Succeeded ends a run of failures and resets the back-off. It logs that the loop works again
// (with the episode's count) once after each failure line, not after every success.
func (r *Retry) Succeeded() {
	if r.owed && r.Log != nil {
		r.Log.Info(r.What+": working again", "failures", r.count)
	}
	r.fails, r.owed = 0, false
}

// Sleep waits d or until ctx ends, and reports whether the whole wait passed.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
