package backoff_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/reelforge/reelforge/internal/backoff"
)

// Wait grows from Min to Max and never falls under half its step.
func TestWait(t *testing.T) {
	t.Parallel()
	p := backoff.Policy{Min: 100 * time.Millisecond, Max: 2 * time.Second}
	for n, step := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond,
		4: 800 * time.Millisecond, 5: 1600 * time.Millisecond, 6: 2 * time.Second, 50: 2 * time.Second} {
		for range 100 {
			if w := p.Wait(n); w < step/2 || w > step {
				t.Fatalf("Wait(%d) = %s, want within [%s, %s]", n, w, step/2, step)
			}
		}
	}
	seen := map[time.Duration]bool{}
	for range 100 {
		seen[p.Wait(6)] = true
	}
	if len(seen) < 10 {
		t.Errorf("Wait(6) took %d values in 100 draws: no jitter", len(seen))
	}
}

// A repeated failure is logged at the 1st, 2nd, 4th, 8th... with its count; success logs once.
func TestRetryLogsOncePerStep(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	r := backoff.Retry{Log: slog.New(slog.NewTextHandler(&buf, nil)), What: "loop: work"}
	for range 100 {
		r.Failed(errors.New("disk full"))
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 7 { // 1 2 4 8 16 32 64
		t.Fatalf("100 failures logged %d lines, want 7:\n%s", len(lines), buf.String())
	}
	if !strings.Contains(lines[6], "failures=64") || !strings.Contains(lines[6], `err="disk full"`) {
		t.Errorf("last line = %s, want the count and the error", lines[6])
	}
	r.Succeeded()
	if !strings.Contains(buf.String(), "working again") || r.Failures() != 0 {
		t.Errorf("after success: failures %d, log:\n%s", r.Failures(), buf.String())
	}
}

// A loop that fails intermittently (successes between its failures) is one episode in the log:
// its failures are counted on, and "working again" comes once after each failure line.
func TestRetryFlappingIsOneEpisode(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	r := backoff.Retry{Log: slog.New(slog.NewTextHandler(&buf, nil)), What: "loop: work"}
	for range 16 {
		r.Failed(errors.New("disk full"))
		r.Succeeded()
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 10 { // failures 1 2 4 8 16, each followed by one "working again"
		t.Fatalf("16 failures between successes logged %d lines, want 10:\n%s", len(lines), buf.String())
	}
	if !strings.Contains(lines[8], "failures=16") || r.Failures() != 0 {
		t.Errorf("failures in a row %d, log:\n%s", r.Failures(), buf.String())
	}
	if w := r.Failed(errors.New("x")); w > backoff.Loops.Min {
		t.Errorf("after a success the next failure waits %s, want the back-off's first step", w)
	}
}

func TestSleep(t *testing.T) {
	t.Parallel()
	if !backoff.Sleep(context.Background(), time.Millisecond) {
		t.Error("Sleep with a live context = false")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if backoff.Sleep(ctx, time.Hour) {
		t.Error("Sleep with an ended context = true")
	}
}
