package plugins

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/enginetest"
)

// BenchmarkRoundTrip measures, through a real echo plugin process (AutoMTLS), one Health call
// host->plugin and one Run that calls back into the host once (Generate). It reports p50 and p99.
func BenchmarkRoundTrip(b *testing.B) {
	dir := buildEcho(b)
	c, err := engine.NewClient(engine.ClientConfig{Name: "echo", Path: dir + "/echo-plugin", SHA256: engine.SkipChecksum})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Kill)
	eng := c.Engine()
	host := enginetest.NewRecordingHost()
	host.GenerateFunc = func(context.Context, *engine.GenerateRequest) (*engine.GenerateResult, error) {
		return &engine.GenerateResult{Text: "pong", OK: true}, nil
	}
	req := &engine.RunRequest{RunID: "bench", Inputs: map[string]any{"ping_host": true}}
	cases := map[string]func(context.Context) error{
		"Health": eng.Health,
		"RunWithHostCallback": func(ctx context.Context) error {
			_, err := eng.Run(ctx, host, req)
			return err
		},
	}
	for _, name := range []string{"Health", "RunWithHostCallback"} {
		call := cases[name]
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			for range 100 { // warm up connections
				if err := call(ctx); err != nil {
					b.Fatal(err)
				}
			}
			durs := make([]time.Duration, 0, b.N)
			host0, plugin0 := selfCPU(), procCPU(c.PID())
			b.ResetTimer()
			for b.Loop() {
				start := time.Now()
				if err := call(ctx); err != nil {
					b.Fatal(err)
				}
				durs = append(durs, time.Since(start))
			}
			b.StopTimer()
			// CPU per call, the host's and the plugin's: what a call costs whatever the machine's load.
			b.ReportMetric(float64((selfCPU()-host0).Microseconds())/float64(len(durs)), "host-cpu-µs/op")
			b.ReportMetric(float64((procCPU(c.PID())-plugin0).Microseconds())/float64(len(durs)), "plugin-cpu-µs/op")
			slices.Sort(durs)
			b.ReportMetric(float64(durs[len(durs)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(durs[len(durs)*99/100].Microseconds()), "p99-µs")
		})
	}
}

// selfCPU is this process's CPU time (user and system).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procCPU is process pid's CPU time (user and system) from /proc (0 where there is none).
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command (in parentheses, which may hold spaces): utime and stime are
	// the 12th and 13th of them, in clock ticks (100 a second on Linux).
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}
