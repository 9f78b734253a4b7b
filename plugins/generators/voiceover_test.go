package generators_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/reelforge/reelforge/host/manifest"
	"github.com/reelforge/reelforge/plugins/generators"
	"github.com/reelforge/reelforge/plugins/node"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// dispatchingHost is the part of the host the generator steps of the node engine use: CreateJob
// with Dispatch submits to the Dispatcher, whose CompleteFunc resolves the job and wakes WaitJob.
type dispatchingHost struct {
	d    *generators.Dispatcher
	mu   sync.Mutex
	jobs map[string]*engine.Job
	done map[string]chan struct{}
}

func (h *dispatchingHost) ReportStep(context.Context, string, engine.TraceStep) error { return nil }
func (h *dispatchingHost) ReportProgress(context.Context, string, float64, string) error {
	return nil
}
func (h *dispatchingHost) Search(context.Context, *engine.SearchRequest) ([]engine.SearchHit, error) {
	return nil, nil
}
func (h *dispatchingHost) Generate(context.Context, *engine.GenerateRequest) (*engine.GenerateResult, error) {
	return &engine.GenerateResult{}, nil
}

func (h *dispatchingHost) CreateJob(ctx context.Context, req *engine.JobRequest) (*engine.Job, error) {
	h.mu.Lock()
	j := &engine.Job{JobID: fmt.Sprintf("job-%d", len(h.jobs)+1), RunID: req.RunID, Type: req.Type, Status: engine.JobRunning, Request: req.Request}
	h.jobs[j.JobID], h.done[j.JobID] = j, make(chan struct{})
	h.mu.Unlock()
	if err := h.d.Dispatch(ctx, j, "http://host.test"); err != nil {
		e := errcode.As(err)
		_ = h.complete(ctx, j.JobID, nil, &engine.RunError{Code: string(e.Code), Message: e.Message()})
	}
	return h.WaitJob(ctx, j.JobID)
}

func (h *dispatchingHost) complete(_ context.Context, jobID string, result json.RawMessage, failure *engine.RunError) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	j := h.jobs[jobID]
	j.Status, j.Result, j.Error = engine.JobCompleted, result, failure
	if failure != nil {
		j.Status = engine.JobFailed
	}
	close(h.done[jobID])
	return nil
}

func (h *dispatchingHost) WaitJob(ctx context.Context, jobID string) (*engine.Job, error) {
	h.mu.Lock()
	ch := h.done[jobID]
	h.mu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	c := *h.jobs[jobID]
	return &c, nil
}

// TestVoiceoverVideoLocally runs the shipped voiceover_video workflow on the node engine with the
// local generators: the script is narrated by espeak-ng and rendered by ffmpeg into an MP4 with a
// video and an audio stream, marked for a free user.
func TestVoiceoverVideoLocally(t *testing.T) {
	t.Parallel()
	needTools(t, "espeak-ng", "ffmpeg", "ffprobe")
	reg, err := manifest.Load(filepath.Join("..", "..", "manifests"))
	if err != nil {
		t.Fatal(err)
	}
	m, ok := reg.Get("voiceover_video")
	if !ok {
		t.Fatal("no voiceover_video manifest")
	}
	dir := t.TempDir()
	h := &dispatchingHost{jobs: map[string]*engine.Job{}, done: map[string]chan struct{}{}}
	h.d = generators.NewDispatcher(generators.Options{DataDir: dir, CompleteFunc: h.complete,
		OwnerFunc: func(context.Context, string) (engine.UserContext, error) {
			return engine.UserContext{UserID: "u-free", Role: "free_user"}, nil
		}})
	t.Cleanup(h.d.Stop)

	res, err := node.New(node.Options{}).Run(t.Context(), h, &engine.RunRequest{RunID: "run-vo", Workflow: m.Workflow(), Attempt: 1,
		Inputs: map[string]any{"topic": "morning coffee", "duration": 10}, User: engine.UserContext{UserID: "u-free", Role: "free_user"}})
	if err != nil || res.Status != engine.StatusCompleted {
		t.Fatalf("Run() = %+v, %v; want completed", res, err)
	}
	h.mu.Lock()
	var video map[string]any
	for _, j := range h.jobs {
		if j.Type == engine.JobVideogen && j.Status == engine.JobCompleted {
			_ = json.Unmarshal(j.Result, &video)
		}
	}
	h.mu.Unlock()
	if video == nil {
		t.Fatalf("no completed videogen job; outputs %v", res.Outputs)
	}
	mp4 := filepath.Join(dir, filepath.FromSlash(video["file_path"].(string)))
	streams, dur := probe(t, mp4)
	if len(streams) != 2 || streams[0] != "video" || streams[1] != "audio" || dur < 1 || video["audio"] != "speech" {
		t.Errorf("video %s: streams %v, duration %.2f, result %v; want video and audio from the narration", mp4, streams, dur, video)
	}
	if !markRegionVaries(t, mp4) || video["watermark"] != true {
		t.Errorf("the free user's video has no visible mark")
	}
}
