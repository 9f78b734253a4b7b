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

// jobHost is the part of the host the generator steps of the node engine use: CreateJob with
// Dispatch hands the job to the generators plugin as the host's runs.PluginJobs does (a Run of
// engine.JobWorkflow for the run's owner) and records its answer; WaitJob returns it.
type jobHost struct {
	eng   engine.Engine
	owner engine.UserContext
	mu    sync.Mutex
	jobs  map[string]*engine.Job
}

func newJobHost(eng engine.Engine, owner engine.UserContext) *jobHost {
	return &jobHost{eng: eng, owner: owner, jobs: map[string]*engine.Job{}}
}

func (h *jobHost) ReportStep(context.Context, string, engine.TraceStep) error { return nil }
func (h *jobHost) ReportProgress(context.Context, string, float64, string) error {
	return nil
}
func (h *jobHost) Search(context.Context, *engine.SearchRequest) ([]engine.SearchHit, error) {
	return nil, nil
}
func (h *jobHost) Generate(context.Context, *engine.GenerateRequest) (*engine.GenerateResult, error) {
	return &engine.GenerateResult{}, nil
}

func (h *jobHost) CreateJob(ctx context.Context, req *engine.JobRequest) (*engine.Job, error) {
	h.mu.Lock()
	j := &engine.Job{JobID: fmt.Sprintf("job-%d", len(h.jobs)+1), RunID: req.RunID, Type: req.Type, Status: engine.JobRunning, Request: req.Request}
	h.jobs[j.JobID] = j
	run := jobRun(j, h.owner, "http://host.test")
	h.mu.Unlock()
	res, err := h.eng.Run(ctx, nil, run)
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case err != nil:
		j.Status, j.Error = engine.JobFailed, &engine.RunError{Code: string(errcode.Of(err)), Message: err.Error()}
	case res.Status == engine.StatusCompleted:
		j.Status = engine.JobCompleted
		j.Result, _ = json.Marshal(res.Outputs)
	default:
		j.Status, j.Error = engine.JobFailed, res.Error
	}
	c := *j
	return &c, nil
}

func (h *jobHost) WaitJob(_ context.Context, jobID string) (*engine.Job, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	j, ok := h.jobs[jobID]
	if !ok {
		return nil, errcode.New(errcode.NotFound, "Job not found")
	}
	c := *j
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
	owner := engine.UserContext{UserID: "u-free", Role: "free_user"}
	h := newJobHost(plugin(t, generators.Options{DataDir: dir}), owner)
	res, err := node.New(node.Options{}).Run(t.Context(), h, &engine.RunRequest{RunID: "run-vo", Workflow: m.Workflow(), Attempt: 1,
		Inputs: map[string]any{"topic": "morning coffee", "duration": 10}, User: owner})
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
