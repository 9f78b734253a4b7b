// Package node is the node engine: it executes a manifest's `steps` as a small DAG of agents.
//
// The same engine serves workflows whose manifest says `engine: node` and, as the fallback, any
// workflow whose own engine (graph runner, automation tool, chatflow tool) is down. It is linked into
// the host as the in-process engine and built as a plugin binary (cmd/node-plugin).
//
// Steps whose dependencies are done run concurrently, at most Options.Concurrency at a time. Each
// step is reported through engine.Host.ReportStep (running, then completed, failed or skipped) with
// its inputs, outputs, timings and, when a language model answered, tokens and cost. The agents:
//
//   - script_writer: a short-video script (or post copy, music brief, live rundown, content plan,
//     by `with.format`) from the model, or a deterministic template when no model is configured.
//   - rewriter: rewrites the latest script in a style, with the model or template rules.
//   - kb_lookup: searches the knowledge base with the run's user and project.
//   - answer: answers a question from the kb_lookup hits, with numbered citations.
//   - generator: creates and awaits an external job (`with.job_type`: speech, music, videogen,
//     videoparse).
//   - human_input: pauses the run until it is resumed with input (RunRequest.ResumeInput).
//   - assemble: collects the script and media of its dependencies into the run's outputs.
//
// Step parameters (`with`) understood by every agent: `optional: true` turns a failure into a skipped
// step (the run goes on and the trace keeps the reason), `when_input: <name>` (or a list of names)
// skips the step unless one of those run inputs is given. A failed agent call is retried
// Options.Retries times (the step's `retries` overrides it); business errors (VALIDATION_ERROR and the
// like) and external-service errors are not retried.
//
// Start at New and Engine.Run.
package node

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// Name is the engine name reported in Info and in every trace step.
const Name = "node"

// Version is the version of the node engine.
const Version = "1.0.0"

// DefaultRetries is how many times a failed agent call is retried when neither Options nor the step
// say otherwise (SPEC.md Limits: agent failure 2 retries).
const DefaultRetries = 2

// DefaultConcurrency is how many steps of one run execute at once by default.
const DefaultConcurrency = 4

// Options configure an Engine. The zero value is usable.
type Options struct {
	// Concurrency bounds the steps of one run that execute at once; 0 means DefaultConcurrency.
	Concurrency int
	// Retries is how many times a failed agent call is retried; 0 means DefaultRetries and a
	// negative value means none. A step's `retries` overrides it.
	Retries int
	// RetryBackoff is the wait before the first retry, doubled for each later one; 0 means 200ms.
	RetryBackoff time.Duration
	// Logger receives problems that do not fail a run (a trace step the host refused); nil discards.
	Logger *slog.Logger
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// Engine is the node engine. It is safe for concurrent use: each Run is independent.
type Engine struct {
	opts Options

	mu   sync.Mutex
	runs map[string]context.CancelFunc // run id -> cancel of the Run in progress
}

var _ engine.Engine = (*Engine)(nil)

// New returns a node engine with opts.
func New(opts Options) *Engine {
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	switch {
	case opts.Retries == 0:
		opts.Retries = DefaultRetries
	case opts.Retries < 0:
		opts.Retries = 0
	}
	if opts.RetryBackoff <= 0 {
		opts.RetryBackoff = 200 * time.Millisecond
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Engine{opts: opts, runs: map[string]context.CancelFunc{}}
}

// Info describes the node engine.
func (e *Engine) Info(ctx context.Context) (*engine.Info, error) {
	return &engine.Info{
		Name:       Name,
		Version:    Version,
		APIVersion: engine.APIVersion,
		Capabilities: []string{engine.CapCancel, "steps", "human_input", "resume", "retry_from_step",
			"agent:script_writer", "agent:rewriter", "agent:kb_lookup", "agent:answer",
			"agent:generator", "agent:human_input", "agent:assemble"},
	}, nil
}

// Run executes req.Workflow.Steps. See the package documentation for the step semantics.
//
// It returns StatusCompleted with the outputs, StatusFailed with the error of the first required step
// that failed (or WORKFLOW_TIMEOUT when the workflow's timeout passed), or StatusPaused at a
// human_input step. When ctx is cancelled it returns promptly with a WORKFLOW_CANCELLED error
// (WORKFLOW_TIMEOUT when ctx's deadline passed).
func (e *Engine) Run(ctx context.Context, h engine.Host, req *engine.RunRequest) (*engine.RunResult, error) {
	if req == nil || h == nil {
		return nil, errcode.New(errcode.Validation, "a run request and a host are required")
	}
	if req.RunID == "" {
		return nil, errcode.Invalid("run_id", "is required")
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if req.RunID != "" {
		e.mu.Lock()
		e.runs[req.RunID] = cancel
		e.mu.Unlock()
		defer func() {
			e.mu.Lock()
			delete(e.runs, req.RunID)
			e.mu.Unlock()
		}()
	}
	r, res := newRun(e, h, req)
	if res != nil {
		return res, nil
	}
	return r.execute(ctx, runCtx)
}

// Callback is not used by the node engine: it awaits its generator jobs itself (Host.WaitJob).
func (e *Engine) Callback(ctx context.Context, h engine.Host, req *engine.CallbackRequest) (*engine.RunResult, error) {
	return nil, errcode.New(errcode.WorkflowInvalidState, "the node engine takes no callbacks: it awaits its jobs itself")
}

// Cancel stops the Run in progress for req.RunID, if any; it is a no-op otherwise.
func (e *Engine) Cancel(ctx context.Context, req *engine.CancelRequest) error {
	if req == nil {
		return nil
	}
	e.mu.Lock()
	cancel := e.runs[req.RunID]
	e.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	return nil
}

// Health always answers nil: the node engine needs nothing outside the host.
func (e *Engine) Health(ctx context.Context) error { return nil }
