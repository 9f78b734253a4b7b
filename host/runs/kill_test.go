package runs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reelforge/reelforge/host/manifest"
	"github.com/reelforge/reelforge/host/plugins"
	"github.com/reelforge/reelforge/host/runs"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/internal/testtool"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// TestKillsUnderLoad SIGKILLs an engine plugin 50 times, each time with runs in flight on it,
// while busy loops load every core. Every run must end within its workflow's timeout: completed
// (on the plugin, or re-run by its node fallback) or failed with a code, never WORKFLOW_CANCELLED
// (nobody cancelled them), and none is left pending or running. It runs on SQLite, then on
// PostgreSQL when TEST_DATABASE_URL is set (one after the other: each loads every core already).
func TestKillsUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the echo plugin and kills it 50 times")
	}
	t.Parallel()
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "echo-plugin"), "github.com/reelforge/reelforge/internal/testplugin/echo/cmd/echo-plugin")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		t.Fatalf("go build echo-plugin: %v", err)
	}
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) { killUnderLoad(t, databases[db](t), dir) })
	}
}

// killUnderLoad is TestKillsUnderLoad on store st, with the echo plugin built in dir.
func killUnderLoad(t *testing.T, st store.Driver, dir string) {
	ctx := context.Background()
	echoEntry, err := manifest.ParseEngine("engines/echo.yaml", []byte("name: echo\n"))
	if err != nil {
		t.Fatal(err)
	}
	const timeout = time.Minute
	wf := &manifest.Manifest{ID: "echo_wf", Name: "echo", Version: "1", Engine: "echo", Fallback: "node", Timeout: timeout,
		Steps: []engine.Step{{ID: "write", Name: "Write", Agent: "script_writer"}}}
	set, err := plugins.NewSet(plugins.Config{Name: "echo", Dir: dir, Host: runs.NoRunHost("echo", nil),
		BackoffMin: 5 * time.Millisecond, BackoffMax: 20 * time.Millisecond, FailureThreshold: 1000, HealthInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := set.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(set.Stop)
	s := newService(t, runs.Deps{Store: st, Manifests: manifest.NewRegistryWith([]*manifest.Engine{echoEntry}, wf), Plugins: set},
		runs.Options{Workers: 8})
	s.StartExecutor(ctx)
	defer s.StopExecutor()
	sup, _ := set.Supervisor("echo")

	// Other work on every core for the whole test.
	stop := make(chan struct{})
	var load sync.WaitGroup
	for range runtime.NumCPU() {
		load.Add(1)
		go func() {
			defer load.Done()
			for {
				select {
				case <-stop:
					return
				//lint:ignore SA5004 the loop spins on purpose: it keeps a core busy
				default:
				}
			}
		}()
	}
	defer func() { close(stop); load.Wait() }()

	user := newUser(t, st)
	var ids []string
	for kill := range 50 {
		testtool.Eventually(t, timeout, fmt.Sprintf("kill %d: the plugin back", kill), func() bool {
			return sup.State() == plugins.StateReady && sup.PID() != 0
		})
		for range 4 {
			r, err := s.Start(ctx, runs.StartParams{Workflow: "echo_wf", User: user, Inputs: map[string]any{"sleep_ms": 50.0}})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, r.ID)
		}
		// The subject: a kill at a moment some of them reached the plugin, not at a state.
		time.Sleep(20 * time.Millisecond)
		if pid := sup.PID(); pid != 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}

	counts := map[string]int{}
	for _, id := range ids {
		r := waitStatusWithin(t, st, id, timeout+30*time.Second, store.RunCompleted, store.RunFailed, store.RunCancelled)
		counts[r.Status+" on "+r.Engine]++
		if r.Status == store.RunCompleted {
			continue
		}
		var e engine.RunError
		_ = json.Unmarshal(r.Error, &e)
		if e.Code == "" || e.Code == string(errcode.WorkflowCancelled) || r.Status == store.RunCancelled {
			t.Errorf("run %s ended %s with %s (%s): want completed, or failed with a code other than cancelled", id, r.Status, e.Code, e.Message)
		}
	}
	t.Logf("%d runs over 50 kills: %v", len(ids), counts)
	for _, status := range []string{store.RunPending, store.RunRunning} {
		if _, n, err := st.ListRuns(ctx, store.ListRunsParams{UserID: user.UserID, Status: status, Limit: 1}); err != nil || n > 0 {
			t.Errorf("%d runs left %s (%v)", n, status, err)
		}
	}
}

// waitStatusWithin waits until run id reaches one of want, failing the test after within.
func waitStatusWithin(t *testing.T, st store.Driver, id string, within time.Duration, want ...string) *store.Run {
	t.Helper()
	var r *store.Run
	if !testtool.Within(within, func() bool {
		var err error
		if r, err = st.GetRun(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		return slices.Contains(want, r.Status)
	}) {
		t.Fatalf("run %s is still %s after %s, want %v", id, r.Status, within, want)
	}
	return r
}
