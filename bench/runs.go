package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/auth"
	"github.com/reelforge/reelforge/host/manifest"
	"github.com/reelforge/reelforge/host/plugins"
	"github.com/reelforge/reelforge/host/runs"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/sqlitestore"
	"github.com/reelforge/reelforge/plugins/node"
	"github.com/reelforge/reelforge/sdk/engine"
)

// benchRuns measures start-to-completed latency and runs per second of a 3-step node workflow, in
// process and through the node plugin (PLUGIN_DIR, default ./bin/plugins), on SQLite, and one gRPC
// round trip host to plugin (Info). Targets: round trip p50 under 100 µs; plugin-routed throughput
// at least 50% of in-process.
func benchRuns(ctx context.Context, o *options) error {
	dir, err := os.MkdirTemp("", "reelforge-bench-runs")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	m := &manifest.Manifest{ID: "bench3", Name: "bench", Version: "1", Engine: "node", Fallback: "node", Timeout: time.Minute,
		Steps: []engine.Step{
			{ID: "write", Name: "Write", Agent: "script_writer"},
			{ID: "rewrite", Name: "Rewrite", Agent: "rewriter", DependsOn: []string{"write"}},
			{ID: "assemble", Name: "Assemble", Agent: "assemble", DependsOn: []string{"rewrite"}},
		}}
	pluginDir := os.Getenv("PLUGIN_DIR")
	if pluginDir == "" {
		pluginDir = "./bin/plugins"
	}
	fmt.Println("## runs: a 3-step node workflow, start to completed (SQLite)")
	fmt.Println()
	fmt.Println("| route | runs/s | p50 ms | p99 ms | failed |")
	fmt.Println("|---|---|---|---|---|")
	var inproc float64
	for _, mode := range []string{"in process", "node plugin"} {
		st, err := sqlitestore.Open(ctx, filepath.Join(dir, uuid.NewString()+".db"), sqlitestore.Options{})
		if err != nil {
			return err
		}
		deps := runs.Deps{Store: st, Manifests: manifest.NewRegistry(m), InProcess: map[string]engine.Engine{"node": node.New(node.Options{})}}
		var set *plugins.Set
		if mode == "node plugin" {
			if _, err := os.Stat(filepath.Join(pluginDir, "node-plugin")); err != nil {
				fmt.Printf("| %s | skipped: no %s/node-plugin (make plugins) | | | |\n", mode, pluginDir)
				st.Close()
				continue
			}
			if set, err = plugins.NewSet(plugins.Config{Name: "node", Dir: pluginDir, Host: runs.NoRunHost("node", nil)}); err != nil {
				return err
			}
			if err := set.Start(ctx); err != nil {
				return err
			}
			deps.Plugins = set
		}
		s := runs.New(deps, runs.Options{Workers: 8, Poll: 5 * time.Millisecond})
		rate, lat, failed, err := runLoad(ctx, s, st, o)
		if err != nil {
			return err
		}
		fmt.Printf("| %s | %.0f | %.2f | %.2f | %d |\n", mode, rate, ms(lat, 0.5), ms(lat, 0.99), failed)
		if mode == "in process" {
			inproc = rate
		} else if inproc > 0 {
			defer fmt.Printf("\nplugin-routed throughput: %.0f%% of in-process (target ≥ 50%%)\n", 100*rate/inproc)
		}
		if set != nil {
			sup, _ := set.Supervisor("node")
			if e, err := sup.Engine(); err == nil {
				var rt []time.Duration
				for range 2000 {
					t0 := time.Now()
					if _, err := e.Info(ctx); err != nil {
						return err
					}
					rt = append(rt, time.Since(t0))
				}
				defer fmt.Printf("\ngRPC round trip host → node plugin (Info, 2000 calls): p50 %.0f µs, p99 %.0f µs (target p50 < 100 µs)\n",
					us(rt, 0.5), us(rt, 0.99))
			}
			set.Stop()
		}
		st.Close()
	}
	fmt.Println()
	return nil
}

// runLoad starts runs from o.clients goroutines (at most 16) for o.duration, each waiting for its
// run to finish; it returns completions per second and start-to-finish latencies.
func runLoad(ctx context.Context, s *runs.Service, st store.Driver, o *options) (float64, []time.Duration, int, error) {
	u := &store.User{ID: uuid.NewString(), Email: uuid.NewString() + "@example.com", Username: "bench", PasswordHash: "x", Role: store.RoleUser}
	if err := st.CreateUser(ctx, u); err != nil {
		return 0, nil, 0, err
	}
	p := &auth.Principal{UserID: u.ID, Role: u.Role}
	var mu sync.Mutex
	done := map[string]chan string{}
	s.OnFinish(func(_ context.Context, r *store.Run) {
		mu.Lock()
		ch := done[r.ID]
		delete(done, r.ID)
		mu.Unlock()
		if ch != nil {
			ch <- r.Status
		}
	})
	s.StartExecutor(ctx)
	defer s.StopExecutor()
	clients := min(max(o.clients, 1), 16)
	var lat []time.Duration
	failed := 0
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(o.duration)
	var firstErr error
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				ch := make(chan string, 1)
				t0 := time.Now()
				id := ""
				mu.Lock()
				r, err := s.Start(ctx, runs.StartParams{Workflow: "bench3", User: p, Inputs: map[string]any{"topic": "coffee"}})
				if err == nil {
					id = r.ID
					done[id] = ch
				}
				mu.Unlock()
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					return
				}
				status := ""
				select {
				case status = <-ch:
				case <-time.After(30 * time.Second):
				}
				d := time.Since(t0)
				mu.Lock()
				lat = append(lat, d)
				if status != store.RunCompleted {
					failed++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return 0, nil, 0, firstErr
	}
	return float64(len(lat)) / elapsed.Seconds(), lat, failed, nil
}

func durQuantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(q*float64(len(s)-1))]
}

func ms(d []time.Duration, q float64) float64 {
	return float64(durQuantile(d, q).Microseconds()) / 1000
}
func us(d []time.Duration, q float64) float64 { return float64(durQuantile(d, q).Nanoseconds()) / 1000 }
