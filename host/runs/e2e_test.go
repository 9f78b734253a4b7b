package runs_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/reelforge/reelforge/host/manifest"
	"github.com/reelforge/reelforge/host/plugins"
	"github.com/reelforge/reelforge/host/runs"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/sdk/engine"
)

// slowDispatcher answers every generator job through the ai-callback path after a delay.
type slowDispatcher struct {
	s     *runs.Service
	delay time.Duration
}

func (d *slowDispatcher) Dispatch(ctx context.Context, job *engine.Job, _ string) error {
	go func() {
		time.Sleep(d.delay)
		raw, _ := json.Marshal(map[string]any{"job_id": job.JobID, "type": job.Type, "status": "completed",
			"result": map[string]any{"audio_url": "https://example.com/a.wav"}})
		_, _ = d.s.Callback(context.Background(), engine.CallbackAI, raw)
	}()
	return nil
}

// Local implements runs.JobDispatcher: the jobs go out and call back.
func (d *slowDispatcher) Local(string) bool { return false }

// The node plugin is killed (SIGKILL, by its PID) while runs wait inside it: every run still
// reaches a terminal state (finished on the in-process engine), the plugin comes back, and later
// runs use it again.
func TestPluginKilledWithRunsInFlight(t *testing.T) {
	if testing.Short() {
		t.Skip("starts plugin processes")
	}
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "node-plugin"), "github.com/reelforge/reelforge/plugins/node/cmd/node-plugin")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build node-plugin: %v\n%s", err, out)
	}
	st := openStore(t)
	m := &manifest.Manifest{ID: "voice", Name: "voice", Version: "1", Engine: "node", Fallback: "node", Timeout: time.Minute,
		Steps: []engine.Step{
			{ID: "write", Name: "Write", Agent: "script_writer"},
			{ID: "speak", Name: "Speak", Agent: "generator", DependsOn: []string{"write"}, With: json.RawMessage(`{"job_type":"speech"}`)},
		}}
	set, err := plugins.NewSet(plugins.Config{Name: "node", Dir: dir, Host: runs.NoRunHost("node", nil), BackoffMin: 50 * time.Millisecond,
		HealthInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := set.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer set.Stop()
	s := newService(t, runs.Deps{Store: st, Manifests: testRegistry(t, m), Plugins: set,
		Jobs: func(s *runs.Service) runs.JobDispatcher { return &slowDispatcher{s: s, delay: 500 * time.Millisecond} }},
		runs.Options{Workers: 8})
	s.StartExecutor(ctx)
	defer s.StopExecutor()
	p := newUser(t, st)

	var ids []string
	for range 6 {
		r, err := s.Start(ctx, runs.StartParams{Workflow: "voice", User: p, Inputs: map[string]any{"topic": "tea"}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	// Wait until every run waits for its job inside the plugin, then kill it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		jobs := 0
		for _, id := range ids {
			if js, _ := st.ListRunJobs(ctx, id); len(js) > 0 {
				jobs++
			}
		}
		if jobs == len(ids) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d runs reached their job", jobs, len(ids))
		}
		time.Sleep(10 * time.Millisecond)
	}
	sup, _ := set.Supervisor("node")
	pid := sup.PID()
	if pid == 0 {
		t.Fatal("no plugin process")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	degraded := 0
	for _, id := range ids {
		got := waitStatus(t, st, id, store.RunCompleted, store.RunFailed, store.RunCancelled)
		if got.Status != store.RunCompleted {
			t.Errorf("run %s after the kill = %s %s", id, got.Status, got.Error)
		}
		if js, _ := st.ListRunJobs(ctx, id); len(js) != 1 {
			t.Errorf("run %s has %d jobs; want its one speech job, awaited again after the kill", id, len(js))
			for _, j := range js {
				t.Logf("job %s %s request %s error %s", j.ID, j.Status, j.Request, j.Error)
			}
		}
		if got.Degraded != "" {
			degraded++
		}
	}
	if degraded == 0 {
		t.Error("no run says it degraded after the plugin was killed under it")
	}
	// The plugin comes back and takes later runs again.
	deadline = time.Now().Add(15 * time.Second)
	for sup.State() != plugins.StateReady || sup.PID() == pid || sup.PID() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("plugin did not come back: %s", sup.State())
		}
		time.Sleep(20 * time.Millisecond)
	}
	r, err := s.Start(ctx, runs.StartParams{Workflow: "voice", User: p, Inputs: map[string]any{"topic": "tea"}})
	if err != nil {
		t.Fatal(err)
	}
	got := waitStatus(t, st, r.ID, store.RunCompleted, store.RunFailed)
	if got.Status != store.RunCompleted || got.Engine != "node" || got.Degraded != "" {
		t.Errorf("run after the restart = %s on %s (degraded %q), want completed on the plugin", got.Status, got.Engine, got.Degraded)
	}
}
