// Package enginetest runs an engine through the real gRPC adapters of package engine in one
// process, with a recording fake Host, and checks it against the engine contract.
//
// Use New in unit tests of an engine, and Conformance once per engine:
//
//	func TestConformance(t *testing.T) { enginetest.Conformance(t, echo.New) }
package enginetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"

	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// New serves impl over gRPC in this process (go-plugin's TestPluginGRPCConn, the same adapters as
// a real plugin, without AutoMTLS) and returns the host-side Engine and the RecordingHost that
// answers the engine's callbacks for calls made with a nil Host. Everything is closed at the end
// of the test.
func New(t testing.TB, impl engine.Engine) (engine.Engine, *RecordingHost) {
	t.Helper()
	rec := NewRecordingHost()
	ps := plugin.PluginSet{engine.PluginName: &engine.GRPCPlugin{Impl: impl, Host: rec}}
	client, server := plugin.TestPluginGRPCConn(t, false, ps)
	t.Cleanup(func() {
		// Close asks the server to shut down (go-plugin's controller); stop it directly only when
		// that failed, as stopping it twice races inside go-plugin.
		if err := client.Close(); err != nil {
			server.Stop()
		}
	})
	raw, err := client.Dispense(engine.PluginName)
	if err != nil {
		t.Fatalf("enginetest: dispense: %v", err)
	}
	return raw.(engine.Engine), rec
}

// Progress is one ReportProgress call.
type Progress struct {
	RunID       string
	Progress    float64
	CurrentStep string
}

// RecordingHost is a fake engine.Host that records what an engine reports. Jobs are kept in memory
// and resolved with ResolveJob; WaitJob blocks until then. SearchFunc and GenerateFunc, when set,
// answer Search and Generate (by default: no hits, and OK=false as when no model is configured).
// Set them before the engine runs. Safe for concurrent use.
type RecordingHost struct {
	SearchFunc   func(ctx context.Context, req *engine.SearchRequest) ([]engine.SearchHit, error)
	GenerateFunc func(ctx context.Context, req *engine.GenerateRequest) (*engine.GenerateResult, error)

	mu       sync.Mutex
	steps    []engine.TraceStep
	progress []Progress
	jobs     map[string]*engine.Job
	order    []string
	resolved map[string]chan struct{}
}

var _ engine.Host = (*RecordingHost)(nil)

// NewRecordingHost returns an empty RecordingHost.
func NewRecordingHost() *RecordingHost {
	return &RecordingHost{jobs: map[string]*engine.Job{}, resolved: map[string]chan struct{}{}}
}

// ReportStep records step.
func (h *RecordingHost) ReportStep(_ context.Context, runID string, step engine.TraceStep) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.steps = append(h.steps, step)
	return nil
}

// ReportProgress records the progress.
func (h *RecordingHost) ReportProgress(_ context.Context, runID string, progress float64, currentStep string) error {
	if progress < 0 || progress > 100 {
		return errcode.Invalid("progress", "must be between 0 and 100")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.progress = append(h.progress, Progress{RunID: runID, Progress: progress, CurrentStep: currentStep})
	return nil
}

// CreateJob stores a pending job with id "job-<n>".
func (h *RecordingHost) CreateJob(_ context.Context, req *engine.JobRequest) (*engine.Job, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	id := fmt.Sprintf("job-%d", len(h.order)+1)
	now := time.Now().UTC()
	j := &engine.Job{JobID: id, RunID: req.RunID, Type: req.Type, Status: engine.JobPending, Request: req.Request,
		MaxRetries: 3, CreatedAt: now, TimeoutAt: now.Add(time.Hour)}
	h.jobs[id] = j
	h.order = append(h.order, id)
	h.resolved[id] = make(chan struct{})
	c := *j
	return &c, nil
}

// WaitJob blocks until ResolveJob resolves the job or ctx ends.
func (h *RecordingHost) WaitJob(ctx context.Context, jobID string) (*engine.Job, error) {
	h.mu.Lock()
	ch, ok := h.resolved[jobID]
	h.mu.Unlock()
	if !ok {
		return nil, errcode.Newf(errcode.NotFound, "job %s not found", jobID)
	}
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

// ResolveJob sets the job's status (JobCompleted, JobFailed, JobTimeout) and result and wakes its
// waiters.
func (h *RecordingHost) ResolveJob(jobID, status string, result []byte) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	j, ok := h.jobs[jobID]
	if !ok {
		return errcode.Newf(errcode.NotFound, "job %s not found", jobID)
	}
	now := time.Now().UTC()
	j.Status, j.Result, j.ResolvedAt = status, result, &now
	select {
	case <-h.resolved[jobID]:
	default:
		close(h.resolved[jobID])
	}
	return nil
}

// Search calls SearchFunc, or answers no hits.
func (h *RecordingHost) Search(ctx context.Context, req *engine.SearchRequest) ([]engine.SearchHit, error) {
	if h.SearchFunc != nil {
		return h.SearchFunc(ctx, req)
	}
	return nil, nil
}

// Generate calls GenerateFunc, or answers OK=false (no model configured).
func (h *RecordingHost) Generate(ctx context.Context, req *engine.GenerateRequest) (*engine.GenerateResult, error) {
	if h.GenerateFunc != nil {
		return h.GenerateFunc(ctx, req)
	}
	return &engine.GenerateResult{OK: false}, nil
}

// Steps returns the recorded trace steps, in order.
func (h *RecordingHost) Steps() []engine.TraceStep {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]engine.TraceStep(nil), h.steps...)
}

// Progress returns the recorded progress reports, in order.
func (h *RecordingHost) Progress() []Progress {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Progress(nil), h.progress...)
}

// Jobs returns copies of the created jobs, in order of creation.
func (h *RecordingHost) Jobs() []engine.Job {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]engine.Job, 0, len(h.order))
	for _, id := range h.order {
		out = append(out, *h.jobs[id])
	}
	return out
}
