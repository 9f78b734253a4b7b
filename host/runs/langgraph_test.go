package runs_test

import (
	"context"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reelforge/reelforge/host/manifest"
	"github.com/reelforge/reelforge/host/plugins"
	"github.com/reelforge/reelforge/host/runs"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/plugins/graph"
	"github.com/reelforge/reelforge/plugins/graph/lgreplay"
	"github.com/reelforge/reelforge/sdk/engine"
)

// A live run on the graph plugin speaking to a stock LangGraph server (its recorded exchanges,
// plugins/graph/testdata/langgraph): the graph's interrupt pauses the run at its node, the resume
// reaches the graph as command.resume, and the run completes on the graph engine with the graph's
// final state, on each database.
func TestLangGraphRunThroughTheHost(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the graph plugin")
	}
	t.Parallel()
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "graph-plugin"), "github.com/reelforge/reelforge/plugins/graph/cmd/graph-plugin")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build graph-plugin: %v\n%s", err, out)
	}
	for name, open := range databases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := open(t)
			var recs [][]lgreplay.Exchange
			for _, f := range []string{"live_review", "live_resume"} {
				rec, err := lgreplay.Load(filepath.Join("..", "..", "plugins", "graph", "testdata", "langgraph", f+".json"))
				if err != nil {
					t.Fatal(err)
				}
				recs = append(recs, rec)
			}
			srv := lgreplay.NewServer(recs...)
			hs := httptest.NewServer(srv)
			t.Cleanup(hs.Close)

			set, err := plugins.NewSet(plugins.Config{Name: "graph", Dir: dir, Host: runs.NoRunHost("graph", nil),
				Env: []string{engine.SettingsEnvValue(map[string]string{"runner_url": hs.URL, "protocol": graph.ProtocolLangGraph})}})
			if err != nil {
				t.Fatal(err)
			}
			if err := set.Start(ctx); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(set.Stop)
			m := &manifest.Manifest{ID: "live", Name: "live", Version: "1", Engine: "graph", Fallback: "node", Timeout: time.Minute,
				Settings: map[string]any{"graph_id": "live_script", "assistant_id": map[string]any{"env": "LANGGRAPH_TEST_UNSET_ASSISTANT", "default": "live_script"}},
				Steps:    []engine.Step{{ID: "write", Name: "Write", Agent: "script_writer"}}}
			s := newService(t, runs.Deps{Store: st, Manifests: testRegistry(t, m), Plugins: set}, runs.Options{Workers: 2})
			s.StartExecutor(ctx)
			t.Cleanup(s.StopExecutor)
			p := newUser(t, st)

			r, err := s.Start(ctx, runs.StartParams{Workflow: "live", User: p, Inputs: map[string]any{"topic": "pour-over coffee", "review": true}})
			if err != nil {
				t.Fatal(err)
			}
			got := waitStatus(t, st, r.ID, store.RunPaused, store.RunFailed, store.RunCompleted)
			if got.Status != store.RunPaused || !strings.Contains(string(got.Awaiting), `"human_review"`) {
				t.Fatalf("run = %s awaiting %s (error %s); want paused at the graph's human_review", got.Status, got.Awaiting, got.Error)
			}
			if _, err := s.Resume(ctx, p, r.ID, map[string]any{"feedback": "mention the bloom"}); err != nil {
				t.Fatal(err)
			}
			got = waitStatus(t, st, r.ID, store.RunCompleted, store.RunFailed)
			if got.Status != store.RunCompleted || got.Engine != "graph" || got.Degraded != "" ||
				!strings.Contains(string(got.Outputs), "Reviewer's note: mention the bloom") {
				t.Fatalf("run = %s on %s (degraded %q), outputs %s, error %s; want completed on the graph with the feedback",
					got.Status, got.Engine, got.Degraded, got.Outputs, got.Error)
			}
			steps, err := st.ListTraceSteps(ctx, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			ids := map[string]bool{}
			for _, s := range steps {
				ids[s.StepID] = true
			}
			for _, want := range []string{"research", "write_rundown", "human_review", "polish", graph.SummaryStepID} {
				if !ids[want] {
					t.Errorf("trace lacks %q: %v", want, ids)
				}
			}
			for _, p := range srv.Problems() {
				t.Error(p)
			}
		})
	}
}
