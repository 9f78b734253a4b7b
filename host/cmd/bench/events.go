package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reelforge/reelforge/host/events/eventsbench"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/pgstore"
	"github.com/reelforge/reelforge/host/store/sqlitestore"
)

// benchEvents: outbox delivery throughput to a local receiver, per driver and batch size, and
// WebSocket fan-out latency to 1,000 clients of one project.
func benchEvents(ctx context.Context, o *options) error {
	dir, err := os.MkdirTemp("", "bench-events-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	const n = 3000
	fmt.Printf("## Events: outbox delivery, %d events emitted then delivered, signed, to a local receiver\n\n", n)
	fmt.Println("| driver | batch size | delivered events/s | emit events/s (one transaction each) |")
	fmt.Println("|---|---:|---:|---:|")
	type opener func() (store.Driver, func(), error)
	drivers := []struct {
		name string
		open opener
	}{{"sqlite", func() (store.Driver, func(), error) {
		d, err := sqlitestore.Open(ctx, filepath.Join(dir, fmt.Sprintf("events-%d.db", time.Now().UnixNano())), sqlitestore.Options{})
		return d, func() { d.Close() }, err
	}}}
	if o.pgURL != "" {
		drivers = append(drivers, struct {
			name string
			open opener
		}{"postgres", func() (store.Driver, func(), error) {
			schema := fmt.Sprintf("bench_events_%d", time.Now().UnixNano())
			d, err := pgstore.Open(ctx, o.pgURL, pgstore.Options{Schema: schema})
			return d, func() {
				if d != nil {
					d.Close()
				}
				if c, err := pgx.Connect(ctx, o.pgURL); err == nil {
					_, _ = c.Exec(ctx, `DROP SCHEMA `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
					c.Close(ctx)
				}
			}, err
		}})
	}
	for _, drv := range drivers {
		for _, batch := range []int{1, 10, 50} {
			d, done, err := drv.open()
			if err != nil {
				return err
			}
			r, err := eventsbench.Outbox(ctx, d, n, batch)
			done()
			if err != nil {
				return err
			}
			fmt.Printf("| %s | %d | %.0f | %.0f |\n", drv.name, batch, r.EventsPerSec, r.EmitPerSec)
		}
	}
	const clients, frames = 1000, 50
	fmt.Printf("\n## Events: WebSocket fan-out, %d clients of one project, %d frames 20 ms apart (loopback, SQLite)\n\n", clients, frames)
	r, err := fanOut(ctx, dir, clients, frames)
	if err != nil {
		return err
	}
	fmt.Println("| clients | frames delivered | p50 ms | p99 ms | max ms |")
	fmt.Println("|---:|---:|---:|---:|---:|")
	fmt.Printf("| %d | %d of %d | %.2f | %.2f | %.2f |\n\n", r.Clients, r.Delivered, clients*frames, r.P50MS, r.P99MS, r.MaxMS)
	return nil
}
