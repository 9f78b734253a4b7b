// Package automation is the automation engine: it triggers a workflow of the external workflow
// automation tool through its webhook and completes the run from the tool's automation-callback.
//
// Run creates an automation job through engine.Host (the engine posts it itself), posts `{job_id,
// run_id, workflow_name, inputs, callback_url, reelforge_url, reelforge_token}` (the last two: the
// host's address and the run's tool credential) to `{AUTOMATION_WEBHOOK_URL}/<settings.webhook_path>`
// and answers StatusWaiting. A tool that is down or answers non-2xx gives AUTOMATION_WEBHOOK_FAILED,
// so the host can retry or fall back. Callback turns `{job_id, workflow_name, status, result,
// error?}` into completed (outputs = result plus workflow_name) or failed, and reports the engine's
// step `automation` with the result.
//
// Start at New.
package automation

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"strings"
	"time"

	"github.com/reelforge/reelforge/internal/outbound"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// Name is the engine name.
const Name = "automation"

// Version is the version of the automation engine.
const Version = "1.0.0"

// StepID is the trace step the engine keeps for the tool's workflow.
const StepID = "automation"

// DefaultTimeout bounds one webhook call.
const DefaultTimeout = 15 * time.Second

// Options configure an Engine.
type Options struct {
	// Tool is the automation tool: its URL is the webhook base (AUTOMATION_WEBHOOK_URL, e.g.
	// http://127.0.0.1:5678/webhook); empty, every Run fails with AUTOMATION_WEBHOOK_FAILED and the
	// host runs the fallback. Its Timeout bounds one webhook call (0: DefaultTimeout).
	outbound.Tool
	// CallbackBaseURL is used when a RunRequest carries no CallbackURL (CALLBACK_BASE_URL).
	CallbackBaseURL string
	// RetryBackoff is the wait before the first retry of a refused webhook call, doubling after
	// each (the automation job policy: 1 s, exponential); 0 means 1 s.
	RetryBackoff time.Duration
}

// Engine is the automation engine. It keeps no state between calls and is safe for concurrent use.
type Engine struct {
	opts Options
}

var _ engine.Engine = (*Engine)(nil)

// Build makes the automation engine from the settings of its registry entry
// (manifests/engines/automation.yaml: webhook_url, callback_base_url): the plugin's main serves it with
// engine.ServeConfigured, and the host builds its in-process copy with it.
func Build(settings map[string]string, log *slog.Logger) engine.Engine {
	return New(Options{Tool: outbound.Tool{URL: settings["webhook_url"], Logger: log}, CallbackBaseURL: settings["callback_base_url"]})
}

// New returns an automation engine with opts.
func New(opts Options) *Engine {
	opts.Tool = opts.Tool.WithDefaults(DefaultTimeout)
	return &Engine{opts: opts}
}

// Info describes the automation engine.
func (e *Engine) Info(context.Context) (*engine.Info, error) {
	return &engine.Info{Name: Name, Version: Version, APIVersion: engine.APIVersion, Capabilities: []string{engine.CapCallbacks, engine.CapToolHealth}}, nil
}

// Health checks the tool (outbound.Tool.Health): VALIDATION_ERROR when no webhook_url is set,
// AUTOMATION_WEBHOOK_FAILED when it does not answer.
func (e *Engine) Health(ctx context.Context) error {
	return e.opts.Health(ctx, "automation.Health", errcode.AutomationWebhookFailed,
		"webhook_url is not set (AUTOMATION_WEBHOOK_URL)", "the automation tool does not answer")
}

// Cancel is a no-op: the automation tool has no cancel hook for a running workflow; a late
// callback for a cancelled run is ignored by the host.
func (e *Engine) Cancel(context.Context, *engine.CancelRequest) error { return nil }

type settings struct {
	WebhookPath  string `json:"webhook_path"`
	WorkflowName string `json:"workflow_name"`
}

// Run triggers the tool's webhook and answers StatusWaiting. See the package documentation.
func (e *Engine) Run(ctx context.Context, h engine.Host, req *engine.RunRequest) (*engine.RunResult, error) {
	var set settings
	if err := engine.DecodeRun(req, h, Name, &set); err != nil {
		return nil, err
	}
	if set.WebhookPath == "" {
		set.WebhookPath = req.Workflow.ID
	}
	if set.WorkflowName == "" {
		set.WorkflowName = req.Workflow.ID
	}
	if e.opts.URL == "" {
		return nil, errcode.New(errcode.AutomationWebhookFailed, "the automation tool is not configured (set AUTOMATION_WEBHOOK_URL)")
	}
	inputs := req.MergedInputs()
	base := req.CallbackURL
	if base == "" {
		base = e.opts.CallbackBaseURL
	}
	url := outbound.Join(e.opts.URL, set.WebhookPath)
	body := map[string]any{
		"run_id": req.RunID, "workflow_name": set.WorkflowName, "workflow_id": req.Workflow.ID, "inputs": inputs,
		"callback_url": outbound.Join(base, engine.CallbackPathAutomation), "user_context": req.User, "project_context": req.Project,
	}
	jobReq, err := json.Marshal(map[string]any{"url": url, "method": http.MethodPost, "payload": body})
	if err != nil {
		return nil, errcode.E("automation.Run", errcode.Unknown, "", err)
	}
	job, err := h.CreateJob(ctx, &engine.JobRequest{RunID: req.RunID, StepID: StepID, Type: engine.JobAutomation, Request: jobReq})
	if err != nil {
		return nil, err
	}
	body["job_id"] = job.JobID
	// The host's address and the run's tool credential, for a workflow that reads the owner's
	// knowledge (POST {reelforge_url}/api/knowledge/context, Authorization: Bearer
	// {reelforge_token}); added after the job's request is stored: the credential is a secret.
	body["reelforge_url"] = strings.TrimRight(base, "/")
	if req.Credential != "" {
		body["reelforge_token"] = req.Credential
	}

	now := e.opts.Now().UTC()
	step := engine.TraceStep{StepID: StepID, StepName: "Automation workflow " + set.WorkflowName, Agent: "automation_tool",
		Status: engine.StepRunning, Engine: Name, StartedAt: &now,
		Inputs: map[string]any{"workflow_name": set.WorkflowName, "webhook_path": set.WebhookPath, "job_id": job.JobID, "inputs": inputs}}
	if err := e.deliver(ctx, url, body, job); err != nil {
		if ctx.Err() != nil {
			return nil, errcode.E("automation.Run", errcode.WorkflowCancelled, "the run was cancelled", ctx.Err())
		}
		e.opts.Logger.Warn("automation webhook failed", "run_id", req.RunID, "job_id", job.JobID, "error", err)
		msg := "the automation tool did not accept the workflow: " + err.Error()
		end := e.opts.Now().UTC()
		step.Status, step.CompletedAt = engine.StepFailed, &end
		step.Error = &engine.StepError{Code: string(errcode.AutomationWebhookFailed), Message: msg}
		e.report(ctx, h, req.RunID, step)
		return nil, errcode.E("automation.Run", errcode.AutomationWebhookFailed, msg, err)
	}
	e.report(ctx, h, req.RunID, step)
	if err := h.ReportProgress(ctx, req.RunID, 10, StepID); err != nil {
		e.opts.Logger.Warn("host refused the progress", "run_id", req.RunID, "error", err)
	}
	return &engine.RunResult{Status: engine.StatusWaiting}, nil
}

// deliver posts the workflow to the tool's webhook, retrying a refused or failed call as the job's
// policy allows (job.MaxRetries more tries, RetryBackoff doubling between them): a webhook that is
// registered a moment late, or a tool restarting, still gets the run. The error says what the tool
// answered the last time (its status and message) and how many calls were made.
func (e *Engine) deliver(ctx context.Context, url string, body map[string]any, job *engine.Job) error {
	wait := e.opts.RetryBackoff
	if wait <= 0 {
		wait = time.Second
	}
	for attempt := 0; ; attempt++ {
		ans, err := outbound.PostJSON(ctx, e.opts.HTTPClient, url, body, e.opts.Timeout)
		if err == nil && ans.OK() {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("it answered %s", toolAnswer(ans))
		}
		if attempt >= job.MaxRetries || ctx.Err() != nil {
			return fmt.Errorf("%w (%d calls)", err, attempt+1)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait << attempt):
		}
	}
}

// toolAnswer is the status and message of a refusal: n8n answers {code, message, hint} (its 404
// for a webhook that is not registered says which one).
func toolAnswer(a *outbound.Answer) string {
	var v struct {
		Message string `json:"message"`
		Hint    string `json:"hint"`
	}
	if json.Unmarshal(a.Body, &v) == nil && v.Message != "" {
		msg := fmt.Sprintf("status %d: %s", a.Status, v.Message)
		if v.Hint != "" {
			msg += " (" + v.Hint + ")"
		}
		return msg
	}
	return a.Brief()
}

// Payload is the body of an automation-callback.
type Payload struct {
	JobID        string                `json:"job_id"`
	RunID        string                `json:"run_id,omitempty"`
	WorkflowName string                `json:"workflow_name"`
	Status       string                `json:"status"`
	Result       map[string]any        `json:"result"`
	Error        *engine.CallbackError `json:"error,omitempty"`
}

// Callback applies an automation-callback to the run. See the package documentation.
func (e *Engine) Callback(ctx context.Context, h engine.Host, req *engine.CallbackRequest) (*engine.RunResult, error) {
	var p Payload
	if err := engine.DecodeCallback(req, h, Name, &p); err != nil {
		return nil, err
	}
	if p.JobID != "" && req.Job.JobID != "" && p.JobID != req.Job.JobID {
		return nil, errcode.Invalid("job_id", "does not match the job")
	}
	runID := req.RunID
	if runID == "" {
		runID = req.Job.RunID
	}
	if runID == "" {
		return nil, errcode.Invalid("run_id", "is required")
	}
	now := e.opts.Now().UTC()
	step := engine.TraceStep{StepID: StepID, StepName: "Automation workflow " + p.WorkflowName, Agent: "automation_tool",
		Engine: Name, CompletedAt: &now, Inputs: map[string]any{"workflow_name": p.WorkflowName, "job_id": req.Job.JobID}}
	if !req.Job.CreatedAt.IsZero() {
		start := req.Job.CreatedAt.UTC()
		d := float64(now.Sub(start).Milliseconds())
		step.StartedAt, step.DurationMS = &start, &d
	}
	res := &engine.RunResult{}
	switch strings.ToLower(strings.TrimSpace(p.Status)) {
	case "completed", "success", "succeeded":
		out := maps.Clone(p.Result)
		if out == nil {
			out = map[string]any{}
		}
		if _, taken := out["workflow_name"]; !taken && p.WorkflowName != "" {
			out["workflow_name"] = p.WorkflowName
		}
		res.Status, res.Outputs = engine.StatusCompleted, out
		step.Status, step.Outputs = engine.StepCompleted, p.Result
	case "failed", "error":
		code, msg := errcode.AutomationWebhookFailed, "the automation workflow failed"
		if p.Error != nil {
			if c := errcode.Code(p.Error.Code); p.Error.Code != "" && errcode.Known(c) && c != errcode.Unknown {
				code = c
			}
			if p.Error.Message != "" {
				msg = p.Error.Message
			}
		}
		res.Status = engine.StatusFailed
		res.Error = &engine.RunError{Code: string(code), Message: msg, StepID: StepID}
		step.Status, step.Error = engine.StepFailed, &engine.StepError{Code: string(code), Message: msg}
	default:
		return nil, errcode.Invalid("status", fmt.Sprintf("%q is not completed or failed", p.Status))
	}
	if err := h.ReportStep(ctx, runID, step); err != nil {
		return nil, err
	}
	return res, nil
}

func (e *Engine) report(ctx context.Context, h engine.Host, runID string, step engine.TraceStep) {
	if err := h.ReportStep(ctx, runID, step); err != nil {
		e.opts.Logger.Warn("host refused a trace step", "run_id", runID, "step_id", step.StepID, "error", err)
	}
}
