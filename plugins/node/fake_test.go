package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reelforge/reelforge/sdk/engine"
)

// fakeHost is a recording engine.Host. Its Func fields steer it; nil ones give sensible defaults
// (no model, no hits, generator jobs that complete at once).
type fakeHost struct {
	GenerateFunc func(ctx context.Context, req *engine.GenerateRequest) (*engine.GenerateResult, error)
	SearchFunc   func(ctx context.Context, req *engine.SearchRequest) ([]engine.SearchHit, error)
	// JobFunc resolves a job: it is called by WaitJob and may block (honour ctx).
	JobFunc func(ctx context.Context, job *engine.Job) error

	mu       sync.Mutex
	steps    []engine.TraceStep
	progress []float64
	jobs     []*engine.Job
	nextJob  int

	generateCalls atomic.Int32
	searchCalls   atomic.Int32
}

var _ engine.Host = (*fakeHost)(nil)

func (h *fakeHost) ReportStep(ctx context.Context, runID string, step engine.TraceStep) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.steps = append(h.steps, step)
	return nil
}

func (h *fakeHost) ReportProgress(ctx context.Context, runID string, progress float64, currentStep string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.progress = append(h.progress, progress)
	return nil
}

func (h *fakeHost) CreateJob(ctx context.Context, req *engine.JobRequest) (*engine.Job, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.nextJob++
	j := &engine.Job{JobID: fmt.Sprintf("job-%d", h.nextJob), RunID: req.RunID, Type: req.Type,
		Status: engine.JobRunning, Request: req.Request, CreatedAt: time.Now()}
	h.jobs = append(h.jobs, j)
	cp := *j
	return &cp, nil
}

func (h *fakeHost) WaitJob(ctx context.Context, jobID string) (*engine.Job, error) {
	h.mu.Lock()
	var job engine.Job
	for _, j := range h.jobs {
		if j.JobID == jobID {
			job = *j
		}
	}
	h.mu.Unlock()
	if h.JobFunc != nil {
		if err := h.JobFunc(ctx, &job); err != nil {
			return nil, err
		}
		return &job, nil
	}
	job.Status = engine.JobCompleted
	job.Result = json.RawMessage(fmt.Sprintf(`{"%s_url": "https://cdn.example/%s"}`, mediaOf(job.Type), jobID))
	return &job, nil
}

func mediaOf(jobType string) string {
	switch jobType {
	case engine.JobSpeech, engine.JobMusic:
		return "audio"
	case engine.JobVideoparse:
		return "source"
	}
	return "video"
}

func (h *fakeHost) Search(ctx context.Context, req *engine.SearchRequest) ([]engine.SearchHit, error) {
	h.searchCalls.Add(1)
	if h.SearchFunc != nil {
		return h.SearchFunc(ctx, req)
	}
	return nil, nil
}

func (h *fakeHost) Generate(ctx context.Context, req *engine.GenerateRequest) (*engine.GenerateResult, error) {
	h.generateCalls.Add(1)
	if h.GenerateFunc != nil {
		return h.GenerateFunc(ctx, req)
	}
	return &engine.GenerateResult{OK: false}, nil
}

// final returns the last reported trace step of each step id.
func (h *fakeHost) final() map[string]engine.TraceStep {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]engine.TraceStep{}
	for _, s := range h.steps {
		out[s.StepID] = s
	}
	return out
}

// reported returns every reported (step id, status) in order.
func (h *fakeHost) reported() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, s := range h.steps {
		out = append(out, s.StepID+":"+s.Status)
	}
	return out
}

// step builds an engine.Step; with is JSON.
func step(id, agent, with string, deps ...string) engine.Step {
	s := engine.Step{ID: id, Name: id, Agent: agent, DependsOn: deps}
	if with != "" {
		s.With = json.RawMessage(with)
	}
	return s
}

func request(steps ...engine.Step) *engine.RunRequest {
	return &engine.RunRequest{
		RunID:    "run-1",
		Workflow: engine.Workflow{ID: "test", Name: "Test", Version: "1", Engine: "node", Steps: steps},
		Inputs:   map[string]any{"topic": "morning coffee", "summary": "A calm pour-over routine. Grind fresh. Pour slowly.", "platform": "douyin"},
		User:     engine.UserContext{UserID: "u-1"},
		Project:  engine.ProjectContext{ProjectID: "p-1"},
		Attempt:  1,
	}
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
