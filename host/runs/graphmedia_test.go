package runs_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/reelforge/reelforge/host/auth"
	"github.com/reelforge/reelforge/host/manifest"
	"github.com/reelforge/reelforge/host/runs"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/internal/outbound"
	"github.com/reelforge/reelforge/plugins/graph"
	"github.com/reelforge/reelforge/sdk/engine"
)

// dramaManifest is short_drama's shape: the graph writes, a generator step renders after it.
func dramaManifest() *manifest.Manifest {
	return &manifest.Manifest{ID: "drama", Name: "drama", Version: "1", Engine: "graph", Fallback: "node", Timeout: time.Minute,
		Steps: []engine.Step{
			{ID: "write", Name: "Write", Agent: "script_writer", With: json.RawMessage(`{"format":"drama"}`)},
			{ID: "render", Name: "Render", Agent: "generator", DependsOn: []string{"write"}, With: json.RawMessage(`{"job_type":"videogen"}`)},
			{ID: "assemble", Name: "Assemble", Agent: "assemble", DependsOn: []string{"write", "render"}},
		}}
}

// A short drama through a runner speaking the project's protocol ends with a video, as through node
// and through LangGraph (issue 39, item 5): the runner gets the host's address and the run's tool
// credential (not stored with its job), its completed callback hands the run back to the executor,
// and the graph engine's next Run renders the graph's script; the runner is posted once.
func TestGraphCallbackThenMedia(t *testing.T) {
	t.Parallel()
	for name, open := range databases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := open(t)
			runner := &recordingRunner{got: make(chan struct{}, 1)}
			srv := httptest.NewServer(runner)
			t.Cleanup(srv.Close)
			eng := graph.New(graph.Options{Tool: outbound.Tool{URL: srv.URL}})
			s := newService(t, runs.Deps{Store: st, Manifests: testRegistry(t, dramaManifest()), Plugins: fakePlugins{eng},
				Credentials: auth.New(st, "test-secret-test-secret-test-secret", 4),
				Jobs:        func(s *runs.Service) runs.JobDispatcher { return &localDispatcher{s: s, complete: true, local: true} }},
				runs.Options{CallbackBaseURL: "http://host.test"})
			s.StartExecutor(ctx)
			t.Cleanup(s.StopExecutor)

			r, err := s.Start(ctx, runs.StartParams{Workflow: "drama", User: newUser(t, st)})
			if err != nil {
				t.Fatal(err)
			}
			run := runner.waitPosts(t, 1)[0]
			if tok, _ := run.Body["reelforge_token"].(string); !auth.IsTool(tok) || run.Body["reelforge_url"] != "http://host.test" {
				t.Errorf("/run body = %v; want reelforge_url and a tool credential", run.Body)
			}
			jobID, _ := run.Body["job_id"].(string)
			if j, err := st.GetJob(ctx, jobID); err != nil || strings.Contains(string(j.Request), "rft_") {
				t.Errorf("the graph job's stored request = %s, %v; want it without the credential", j.Request, err)
			}

			script := "Scene 1. Lin finds a lost letter.\nLin: Who wrote this?"
			if _, err := s.Callback(ctx, engine.CallbackGraph, []byte(`{"run_id":"`+r.ID+`","job_id":"`+jobID+
				`","status":"completed","outputs":{"title":"A lost letter","script":`+quote(script)+`},"trace":[{"step_id":"write","status":"completed"}]}`)); err != nil {
				t.Fatalf("completed callback: %v", err)
			}
			got := waitStatus(t, st, r.ID, store.RunCompleted, store.RunFailed)
			if got.Status != store.RunCompleted {
				t.Fatalf("run = %s %s; want completed", got.Status, got.Error)
			}
			var out map[string]any
			_ = json.Unmarshal(got.Outputs, &out)
			assets, _ := out["assets"].(map[string]any)
			if out["script"] != script || assets["video_url"] != "/api/assets/files/u/v.mp4" {
				t.Errorf("outputs = %s; want the graph's script and the render's video", got.Outputs)
			}
			if n := len(runner.posts()); n != 1 {
				t.Errorf("the runner got %d requests; want the one /run", n)
			}
		})
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
