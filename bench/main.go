// Command bench measures the host's speed for BENCHMARKS.md: `make bench` runs it. Each section
// prints a Markdown table. Sections: api (request throughput and latency against a bare Fiber
// handler, per driver), knowledge (ingest and search of the knowledge base, per driver), retrieval
// (hit@5 and MRR@10 over ../shared/bench), events (outbox delivery throughput, WebSocket fan-out latency), scheduler
// (one tick over 10,000 projects with due tasks), runs (a 3-step workflow in process and through the
// node plugin, and one gRPC round trip), render (a 30 s voiceover_video from three pictures and a
// clip with the local espeak-ng and ffmpeg). PostgreSQL figures need TEST_DATABASE_URL.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/reelforge/reelforge/host/app"
)

// section is one part of the benchmark.
type section struct {
	name string
	run  func(ctx context.Context, o *options) error
}

type options struct {
	duration time.Duration
	clients  int
	pgURL    string
	// renderQuality limits the render section to the rows of one quality ("" for all): the draft
	// alone takes a tenth of the section's time, to compare two builds back to back.
	renderQuality string
}

var sections = []section{
	{"api", benchAPI},
	{"knowledge", benchKnowledge},
	{"retrieval", kbRetrieval},
	{"events", benchEvents},
	{"scheduler", benchScheduler},
	{"runs", benchRuns},
	{"render", benchRender},
}

func main() {
	only := flag.String("only", "", "comma-separated sections to run (default all): "+names())
	dur := flag.Duration("duration", 5*time.Second, "how long each load test runs")
	clients := flag.Int("clients", 64, "concurrent clients of the load tests")
	renderQuality := flag.String("render-quality", "", "render only the rows of this quality (standard, draft; default all)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	o := &options{duration: *dur, clients: *clients, pgURL: os.Getenv("TEST_DATABASE_URL"), renderQuality: *renderQuality}
	// The host runs with these collector settings (reelforge serve), so every section does too.
	gc, limit := app.TuneGC()
	fmt.Printf("# reelforge bench — %s, %s/%s, %d CPUs, GOMAXPROCS %d, GOGC %d, memory limit %d MiB (0: from the environment)\n\n",
		time.Now().UTC().Format(time.RFC3339), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0), gc, limit>>20)
	ctx := context.Background()
	for _, s := range sections {
		if *only != "" && !strings.Contains(","+*only+",", ","+s.name+",") {
			continue
		}
		if err := s.run(ctx, o); err != nil {
			fmt.Fprintf(os.Stderr, "bench %s: %v\n", s.name, err)
			pprof.StopCPUProfile()
			os.Exit(1)
		}
	}
}

func names() string {
	var n []string
	for _, s := range sections {
		n = append(n, s.name)
	}
	return strings.Join(n, ",")
}
