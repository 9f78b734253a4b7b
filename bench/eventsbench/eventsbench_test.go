package eventsbench_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/reelforge/reelforge/bench/eventsbench"
	"github.com/reelforge/reelforge/host/store/sqlitestore"
)

func TestOutboxSmall(t *testing.T) {
	t.Parallel()
	d, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "b.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	r, err := eventsbench.Outbox(t.Context(), d, 200, 10)
	if err != nil {
		t.Fatal(err)
	}
	if r.Events != 200 || r.EventsPerSec <= 0 {
		t.Errorf("Outbox = %+v", r)
	}
	t.Logf("outbox: %.0f events/s delivered (batch 10), emit %.0f/s", r.EventsPerSec, r.EmitPerSec)
}

// BenchmarkEvents prints the full measurements: go test -run '^$' -bench Events -benchtime 1x ./bench/eventsbench/
func BenchmarkEvents(b *testing.B) {
	for range b.N {
		if err := eventsbench.Run(b.Context(), benchOut{b}, nil); err != nil {
			b.Fatal(err)
		}
	}
}

type benchOut struct{ b *testing.B }

func (o benchOut) Write(p []byte) (int, error) { o.b.Log(string(p)); return len(p), nil }
