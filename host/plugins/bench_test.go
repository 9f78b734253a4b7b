package plugins

import (
	"context"
	"slices"
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
			b.ResetTimer()
			for b.Loop() {
				start := time.Now()
				if err := call(ctx); err != nil {
					b.Fatal(err)
				}
				durs = append(durs, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(durs)
			b.ReportMetric(float64(durs[len(durs)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(durs[len(durs)*99/100].Microseconds()), "p99-µs")
		})
	}
}
