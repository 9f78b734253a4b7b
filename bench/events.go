package main

import (
	"context"
	"fmt"
	"os"

	"github.com/reelforge/reelforge/bench/eventsbench"
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
	drivers := benchStores(ctx, o, "bench_events")
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
