package testtool

import (
	"testing"
	"time"
)

// Poll is how often Eventually looks again.
const Poll = 10 * time.Millisecond

// Eventually waits until cond holds, looking every Poll, and fails t naming what when it still
// does not after timeout. It is how a test waits for something another goroutine or process does
// (a state reached, a row written), instead of sleeping a guessed time: it returns as soon as the
// condition holds, and the timeout only bounds a failure.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Within(timeout, cond) {
		t.Fatalf("waited %v for %s", timeout, what)
	}
}

// Within reports whether cond holds within timeout, looking every Poll; for a test that goes on
// either way.
func Within(timeout time.Duration, cond func() bool) bool {
	return WithinEvery(timeout, Poll, cond)
}

// WithinEvery is Within looking every every: for a condition that costs something to look at
// (requests to a host process, a query per item).
func WithinEvery(timeout, every time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if cond() {
			return true
		}
		select {
		case <-deadline.C:
			return cond()
		case <-tick.C:
		}
	}
}
