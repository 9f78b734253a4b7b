package tick_test

import (
	"context"
	"testing"
	"time"

	"github.com/reelforge/reelforge/internal/tick"
)

func TestEveryStopsWhenFAnswersFalse(t *testing.T) {
	t.Parallel()
	calls := 0
	tick.Every(t.Context(), time.Millisecond, func(context.Context) bool {
		calls++
		return calls < 3
	})
	if calls != 3 {
		t.Errorf("f called %d times, want 3", calls)
	}
}

func TestEveryStopsWhenCtxEnds(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	tick.Every(ctx, time.Hour, func(context.Context) bool {
		t.Error("f called after ctx ended")
		return true
	})
}

// Tickers of one interval started together tick apart: their phases are random.
func TestTickersStartedTogetherTickApart(t *testing.T) {
	t.Parallel()
	phases := map[time.Duration]bool{}
	start := time.Now()
	var ts []*tick.Ticker
	for range 3 {
		ts = append(ts, tick.NewTicker(time.Second))
	}
	for _, tk := range ts {
		at := (<-tk.C).Sub(start)
		tk.Stop()
		phases[at.Round(time.Millisecond)] = true
	}
	if len(phases) < 2 {
		t.Errorf("three tickers started together ticked at the same moment: %v", phases)
	}
}
