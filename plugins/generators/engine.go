package generators

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// Name is the engine name.
const Name = "generators"

// Version is the version of the generators engine.
const Version = "1.0.0"

// StepID is the trace step of a generators run.
const StepID = "generate"

// Engine runs one generator job per run: the manifest's settings.job_type (or the input job_type)
// with the run's inputs as payload. The host submits the job (Host.CreateJob with Dispatch), which
// it hands back to this engine as a Run of engine.JobWorkflow; the engine awaits the job and
// completes with its result. Safe for concurrent use.
type Engine struct {
	opts Options
	jobs *executor // does the jobs the host hands this engine (Runs of engine.JobWorkflow)
}

var _ engine.Engine = (*Engine)(nil)

// New returns a generators engine: it does the jobs the host hands it with opts.
func New(opts Options) *Engine {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Engine{opts: opts, jobs: newExecutor(opts)}
}

// Info describes the generators engine.
func (e *Engine) Info(context.Context) (*engine.Info, error) {
	return &engine.Info{Name: Name, Version: Version, APIVersion: engine.APIVersion,
		Capabilities: []string{"job:music", "job:videogen", "job:speech", "job:videoparse"}}, nil
}

// Health answers nil.
func (e *Engine) Health(context.Context) error { return nil }

// Cancel is a no-op: the job's wait ends with the run's context.
func (e *Engine) Cancel(context.Context, *engine.CancelRequest) error { return nil }

type engineSettings struct {
	JobType string         `json:"job_type"`
	Params  map[string]any `json:"params"`
}

// Run submits the generator job through the host and awaits it.
func (e *Engine) Run(ctx context.Context, h engine.Host, req *engine.RunRequest) (*engine.RunResult, error) {
	if req == nil {
		return nil, errcode.New(errcode.Validation, "a run request is required")
	}
	if req.RunID == "" {
		return nil, errcode.Invalid("run_id", "is required")
	}
	if req.Workflow.ID == engine.JobWorkflow {
		return e.job(ctx, req) // the job's answer is the Run's: no Host call
	}
	if h == nil {
		return nil, errcode.New(errcode.Validation, "a host is required")
	}
	var set engineSettings
	if len(req.Workflow.Settings) > 0 {
		if err := json.Unmarshal(req.Workflow.Settings, &set); err != nil {
			return nil, errcode.E("generators.Run", errcode.Validation, "the workflow's generator settings are not valid", err)
		}
	}
	if set.JobType == "" {
		set.JobType, _ = req.Inputs["job_type"].(string)
	}
	if !engine.IsGeneratorJob(set.JobType) {
		return nil, errcode.Invalid("job_type", "must be one of "+strings.Join(engine.GeneratorJobs, ", "))
	}
	payload := maps.Clone(req.Inputs)
	if payload == nil {
		payload = map[string]any{}
	}
	delete(payload, "job_type")
	maps.Copy(payload, set.Params)
	delete(payload, "user_id") // the owner comes from the run, never from what a user typed
	delete(payload, "role")
	body, err := json.Marshal(payload)
	if err != nil {
		return nil, errcode.E("generators.Run", errcode.Validation, "the inputs are not JSON", err)
	}
	start := e.opts.Now().UTC()
	step := engine.TraceStep{StepID: StepID, StepName: "Generate " + set.JobType, Agent: "generator", Status: engine.StepRunning,
		Inputs: map[string]any{"job_type": set.JobType, "payload": payload}, StartedAt: &start, Engine: Name}
	if err := h.ReportStep(ctx, req.RunID, step); err != nil {
		return nil, err
	}
	job, err := h.CreateJob(ctx, &engine.JobRequest{RunID: req.RunID, StepID: StepID, Type: set.JobType, Request: body, Dispatch: true})
	if err != nil {
		return nil, err
	}
	if job.Status != engine.JobCompleted && job.Status != engine.JobFailed && job.Status != engine.JobTimeout {
		if job, err = h.WaitJob(ctx, job.JobID); err != nil {
			if ctx.Err() != nil {
				return nil, errcode.E("generators.Run", errcode.WorkflowCancelled, "the run was cancelled", ctx.Err())
			}
			return nil, err
		}
	}
	end := e.opts.Now().UTC()
	d := float64(end.Sub(start).Milliseconds())
	step.CompletedAt, step.DurationMS = &end, &d
	res := jobOutcome(job)
	if res.Status == engine.StatusCompleted {
		step.Status, step.Outputs = engine.StepCompleted, res.Outputs
	} else {
		step.Status, step.Error = engine.StepFailed, &engine.StepError{Code: res.Error.Code, Message: res.Error.Message}
		res.Error.StepID = StepID
	}
	if err := h.ReportStep(ctx, req.RunID, step); err != nil {
		return nil, err
	}
	return res, nil
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

// jobOutcome turns a resolved job into the run's result.
func jobOutcome(job *engine.Job) *engine.RunResult {
	switch job.Status {
	case engine.JobCompleted:
		out := map[string]any{}
		if len(job.Result) > 0 {
			var m map[string]any
			if err := json.Unmarshal(job.Result, &m); err == nil {
				out = m
			} else {
				out["result"] = json.RawMessage(job.Result)
			}
		}
		out["job_id"], out["job_type"] = job.JobID, job.Type
		return &engine.RunResult{Status: engine.StatusCompleted, Outputs: out}
	case engine.JobTimeout:
		return &engine.RunResult{Status: engine.StatusFailed, Error: &engine.RunError{Code: string(errcode.WorkflowTimeout),
			Message: fmt.Sprintf("the %s job timed out", job.Type)}}
	}
	re := &engine.RunError{Code: string(failureCode(job.Type)), Message: fmt.Sprintf("the %s job failed", job.Type)}
	if job.Error != nil {
		if c := errcode.Code(job.Error.Code); errcode.Known(c) && c != errcode.Unknown {
			re.Code = job.Error.Code
		}
		if job.Error.Message != "" {
			re.Message = job.Error.Message
		}
	}
	return &engine.RunResult{Status: engine.StatusFailed, Error: re}
}

// CallbackPayload is the body of an ai-callback.
type CallbackPayload struct {
	JobID  string          `json:"job_id"`
	Type   string          `json:"type"`
	Status string          `json:"status"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// Callback interprets an ai-callback for a generator job: completed with its result, or failed.
// (The host normally resolves generator jobs itself and wakes the Run awaiting them.)
func (e *Engine) Callback(ctx context.Context, h engine.Host, req *engine.CallbackRequest) (*engine.RunResult, error) {
	if req == nil {
		return nil, errcode.New(errcode.Validation, "a callback request is required")
	}
	var p CallbackPayload
	if err := json.Unmarshal(req.Payload, &p); err != nil {
		return nil, errcode.E("generators.Callback", errcode.Validation, "the ai-callback body is not valid JSON of the expected shape", err)
	}
	if p.JobID != "" && req.Job.JobID != "" && p.JobID != req.Job.JobID {
		return nil, errcode.Invalid("job_id", "does not match the job")
	}
	job := req.Job
	if job.Type == "" {
		job.Type = p.Type
	}
	job.Result = p.Result
	switch strings.ToLower(p.Status) {
	case "completed", "success", "succeeded":
		job.Status = engine.JobCompleted
	case "failed", "error":
		job.Status = engine.JobFailed
		if p.Error != nil {
			job.Error = &engine.RunError{Code: p.Error.Code, Message: p.Error.Message}
		}
	default:
		return nil, errcode.Invalid("status", fmt.Sprintf("%q is not completed or failed", p.Status))
	}
	return jobOutcome(&job), nil
}
