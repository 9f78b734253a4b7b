package node_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/reelforge/reelforge/host/manifest"
	"github.com/reelforge/reelforge/plugins/node"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/enginetest"
)

func TestConformance(t *testing.T) {
	enginetest.Conformance(t, func() engine.Engine { return node.New(node.Options{}) })
}

// TestVideoThroughGRPC runs the shipped video workflow through the real gRPC adapters: trace steps,
// progress and generator jobs all cross the plugin boundary.
func TestVideoThroughGRPC(t *testing.T) {
	t.Parallel()
	reg, err := manifest.Load(filepath.Join("..", "..", "manifests"))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := reg.Get("video")
	eng, host := enginetest.New(t, node.New(node.Options{}))

	// Resolve each job as it appears: speech completes, the render fails (an absent generator).
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		done := map[string]bool{}
		for ctx.Err() == nil {
			for _, j := range host.Jobs() {
				if done[j.JobID] {
					continue
				}
				done[j.JobID] = true
				status, result := engine.JobCompleted, []byte(`{"audio_url":"https://cdn.example/a.mp3"}`)
				if j.Type == engine.JobVideogen {
					status, result = engine.JobFailed, nil
				}
				if err := host.ResolveJob(j.JobID, status, result); err != nil {
					t.Errorf("ResolveJob(%s) = %v", j.JobID, err)
				}
			}
			time.Sleep(5 * time.Millisecond) // a responder's pace: host.Jobs offers no channel to wait on
		}
	}()

	res, err := eng.Run(t.Context(), nil, &engine.RunRequest{
		RunID: "run-grpc", Workflow: m.Workflow(), Attempt: 1,
		Inputs:   map[string]any{"summary": "a 15 second video about a morning coffee routine", "platform": "douyin"},
		User:     engine.UserContext{UserID: "u-1"},
		Degraded: "test",
	})
	if err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	if res.Status != engine.StatusCompleted {
		t.Fatalf("Run() = %+v, want completed", res.Error)
	}
	final := map[string]string{}
	for _, s := range host.Steps() {
		final[s.StepID] = s.Status
		if s.Engine != "node" || s.Degraded != "test" {
			t.Errorf("step %s: engine %q degraded %q", s.StepID, s.Engine, s.Degraded)
		}
	}
	want := map[string]string{"research": "completed", "write_script": "completed", "polish": "completed",
		"speech": "completed", "render": "skipped", "assemble": "completed"}
	for id, st := range want {
		if final[id] != st {
			t.Errorf("step %s = %q, want %q (all: %v)", id, final[id], st, final)
		}
	}
	assets, _ := res.Outputs["assets"].(map[string]any)
	if assets["audio_url"] != "https://cdn.example/a.mp3" {
		t.Errorf("outputs.assets = %v, want the speech's audio_url", res.Outputs["assets"])
	}
	if p := host.Progress(); len(p) == 0 || p[len(p)-1].Progress != 100 {
		t.Errorf("progress = %v, want to end at 100", p)
	}
}
