package generators

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// Name is the engine name.
const Name = "generators"

// Version is the version of the generators engine.
const Version = "1.0.0"

// Engine executes the generator jobs the host hands it, each as a Run of engine.JobWorkflow that
// lasts as long as the work (runs.PluginJobs). It runs no workflow of its own: its entry says
// `workflows: false`, so a manifest naming it is refused at load, and a workflow makes speech,
// video, music or link jobs with generator steps of the node engine. engine.Base gives it Health,
// Cancel (cancelling the Run's context stops the job's tools) and Callback, which the host never
// calls (its Info declares no callbacks). Safe for concurrent use.
type Engine struct {
	engine.Base
	jobs *executor
}

var _ engine.Engine = (*Engine)(nil)

// Build makes the generators engine from the settings of its registry entry (optionsFrom): the
// plugin's main serves it with engine.ServeConfigured.
func Build(settings map[string]string, log *slog.Logger) engine.Engine {
	return New(optionsFrom(settings, log))
}

// New returns a generators engine: it does the jobs the host hands it with opts.
func New(opts Options) *Engine {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Engine{jobs: newExecutor(opts)}
}

// Info describes the generators engine.
func (e *Engine) Info(context.Context) (*engine.Info, error) {
	return &engine.Info{Name: Name, Version: Version, APIVersion: engine.APIVersion,
		Capabilities: []string{"job:music", "job:videogen", "job:speech", "job:videoparse"}}, nil
}

// Run does the job a Run of engine.JobWorkflow carries and answers its outcome.
func (e *Engine) Run(ctx context.Context, _ engine.Host, req *engine.RunRequest) (*engine.RunResult, error) {
	if req == nil {
		return nil, errcode.New(errcode.Validation, "a run request is required")
	}
	if req.RunID == "" {
		return nil, errcode.Invalid("run_id", "is required")
	}
	if req.Workflow.ID != engine.JobWorkflow {
		return nil, errcode.Invalid("workflow", "the generators engine runs only the jobs the host hands it: use generator steps of the node engine")
	}
	return e.job(ctx, req)
}

// job does the job the host handed over in req (engine.JobWorkflow) and answers its outcome.
func (e *Engine) job(ctx context.Context, req *engine.RunRequest) (*engine.RunResult, error) {
	var job engine.Job
	raw, err := json.Marshal(req.Inputs["job"])
	if err == nil {
		err = json.Unmarshal(raw, &job)
	}
	if err != nil || job.JobID == "" {
		return nil, errcode.Invalid("job", "the input job must be a job with a job_id")
	}
	if job.RunID != req.RunID {
		return nil, errcode.Invalid("job", "the job is not of the run")
	}
	result, failure, waiting := e.jobs.Execute(ctx, &job, req.User, req.CallbackURL)
	switch {
	case waiting:
		return &engine.RunResult{Status: engine.StatusWaiting}, nil
	case failure != nil:
		return &engine.RunResult{Status: engine.StatusFailed, Error: failure}, nil
	}
	out := map[string]any{}
	if err := json.Unmarshal(result, &out); err != nil {
		return nil, errcode.E("generators.job", errcode.ExternalService, "the job's result is not a JSON object", err)
	}
	return &engine.RunResult{Status: engine.StatusCompleted, Outputs: out}, nil
}
