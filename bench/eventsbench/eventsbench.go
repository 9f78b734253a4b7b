// Package eventsbench measures the events outbox: delivery throughput (events per second posted,
// signed, to a local receiver that answers 200 at once). It is meant for bench (make
// bench) and runs entirely on this machine. The WebSocket fan-out goes through host/api's route,
// so bench measures it (fanout.go): a bench package imports nothing above what it measures.
package eventsbench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/reelforge/reelforge/host/events"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/sqlitestore"
)

// OutboxResult is one outbox throughput run.
type OutboxResult struct {
	Driver       string  `json:"driver"`
	Events       int     `json:"events"`
	BatchSize    int     `json:"batch_size"`
	Seconds      float64 `json:"seconds"`
	EventsPerSec float64 `json:"events_per_s"`
	EmitPerSec   float64 `json:"emit_per_s"` // Emit in its own transaction, one at a time
}

// Store is what Outbox needs of a database: events.Emit's method in a transaction, the worker's,
// and the driver's name for the result.
type Store interface {
	store.Transactor
	events.Outbox
	events.WorkerStore
	Name() string
}

// Outbox stores n events in d, then runs a worker (batch size batch, 5 ms interval) until a local
// receiver has accepted them all.
func Outbox(ctx context.Context, d Store, n, batch int) (*OutboxResult, error) {
	var got atomic.Int64
	all := make(chan struct{})
	rec := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if got.Add(1) == int64(n) {
			close(all)
		}
	}))
	defer rec.Close()
	start := time.Now()
	for i := range n {
		err := store.InTx(ctx, d, func(tx Store) error {
			return events.Emit(ctx, tx, events.Event{Name: events.JobStatusChanged, Data: map[string]any{"jobId": i, "status": "running"}})
		})
		if err != nil {
			return nil, err
		}
	}
	emitted := time.Since(start)
	w := events.NewWorker(d, events.WorkerConfig{URL: rec.URL, Secret: "bench", Enabled: true, BatchSize: batch,
		Interval: 5 * time.Millisecond, Timeout: 5 * time.Second})
	start = time.Now()
	if err := w.Start(ctx); err != nil {
		return nil, err
	}
	defer w.Stop()
	select {
	case <-all:
	case <-time.After(5 * time.Minute):
		return nil, fmt.Errorf("eventsbench: %d of %d events delivered in 5 min", got.Load(), n)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	took := time.Since(start)
	return &OutboxResult{Driver: d.Name(), Events: n, BatchSize: batch, Seconds: took.Seconds(),
		EventsPerSec: float64(n) / took.Seconds(), EmitPerSec: float64(n) / emitted.Seconds()}, nil
}

// Run measures outbox throughput on SQLite (and on PostgreSQL through openPG when it is not nil),
// printing one JSON line per result to out.
func Run(ctx context.Context, out io.Writer, openPG func(ctx context.Context) (store.Driver, error)) error {
	dir, err := os.MkdirTemp("", "eventsbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	enc := json.NewEncoder(out)
	st, err := sqlitestore.Open(ctx, filepath.Join(dir, "outbox.db"), sqlitestore.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	drivers := []store.Driver{st}
	if openPG != nil {
		pg, err := openPG(ctx)
		if err != nil {
			return err
		}
		defer pg.Close()
		drivers = append(drivers, pg)
	}
	for _, d := range drivers {
		for _, batch := range []int{1, 10, 50} {
			r, err := Outbox(ctx, d, 2000, batch)
			if err != nil {
				return err
			}
			if err := enc.Encode(map[string]any{"bench": "events_outbox_delivery", "result": r}); err != nil {
				return err
			}
		}
	}
	return nil
}
