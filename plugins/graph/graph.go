// Package graph is the graph engine: it hands runs to the external agent graph runner and turns the
// runner's graph-callback into the run's trace and result.
//
// Run creates a graph job through engine.Host (the engine posts it itself: no host dispatch), posts
// `{run_id, job_id, workflow_id, graph_id, inputs, callback_url, user_context, project_context,
// attempt, reelforge_url, reelforge_token}` to `{RUNNER_URL}/run` (the last two: the host's address
// and the run's tool credential, to read the owner's knowledge) and answers StatusWaiting: the run stays running until the runner calls back at
// `<callback base>/api/webhooks/graph-callback`. A runner that is down or answers non-2xx gives a
// GRAPH_RUNNER_ERROR, so the host can retry or run the workflow on its fallback engine. A resume
// (RunRequest.ResumeInput) posts /run again with the input merged into the inputs. `attempt` counts
// the postings of the run's graph (a job created again after a time-out carries its retry count).
// The runner keeps its job alive with `running` callbacks: each moves the job's deadline by the
// job's timeout, so only a runner silent for longer than that is timed out; the host then asks it
// to stop that job (Cancel, POST /cancel {run_id, job_ids}) before the next attempt is posted, and
// answers any later callback of the job 410.
//
// Callback reports every step of the callback's trace (ids, timings, tokens, cost kept), updates the
// engine's own summary step `graph_runner` with the run's totals (metadata.total_tokens,
// total_cost_usd, duration_ms), and answers completed (the callback's outputs), failed (the
// callback's error code, else AGENT_EXECUTION_FAILED) or paused (awaiting the pending human step, or
// `graph_review`, with outputs.prompt). A `running` callback only reports progress. When the
// workflow has generator steps after the graph (short_drama's render), a completed callback
// answers StatusContinue instead, the graph's outputs kept on the summary step: the host executes
// the run again and Run makes the media from them (media.go), as the LangGraph protocol does, so
// a short drama written by either runner ends with its video.
//
// With Options.Protocol ProtocolLangGraph (RUNNER_PROTOCOL=langgraph) the runner is a stock
// LangGraph server instead, driven through its own API and followed by the engine until the graph
// ends or interrupts (langgraph.go); the workflow's generator steps then run on the graph's outputs
// (media.go), so a short drama written by a graph ends with its video.
//
// Start at New.
package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/reelforge/reelforge/internal/outbound"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// Name is the engine name.
const Name = "graph"

// Version is the version of the graph engine.
const Version = "1.0.0"

// SummaryStepID is the trace step the engine keeps for the runner's work as a whole.
const SummaryStepID = "graph_runner"

// DefaultReviewStep is the step a paused run awaits when the callback names no pending human step.
const DefaultReviewStep = "graph_review"

// DefaultTimeout bounds one request to the runner.
const DefaultTimeout = 15 * time.Second

// Options configure an Engine.
type Options struct {
	// Tool is the agent graph runner: its URL is the runner's base address (RUNNER_URL); empty,
	// every Run fails with GRAPH_RUNNER_ERROR and the host runs the workflow on its fallback. Its
	// Timeout bounds one request to the runner (0: DefaultTimeout).
	outbound.Tool
	// CallbackBaseURL is used when a RunRequest carries no CallbackURL (CALLBACK_BASE_URL).
	CallbackBaseURL string
	// Protocol is what the runner speaks: ProtocolReelforge (empty: the default) or
	// ProtocolLangGraph, a stock LangGraph server (langgraph.go).
	Protocol string
	// APIKey is sent as X-Api-Key to a LangGraph server that requires one (RUNNER_API_KEY).
	APIKey string
}

// Engine is the graph engine. It keeps no state between calls and is safe for concurrent use.
type Engine struct {
	opts Options
}

var _ engine.Engine = (*Engine)(nil)

// Build makes the graph engine from the settings of its registry entry
// (manifests/engines/graph.yaml: runner_url, protocol, api_key, callback_base_url): the plugin's
// main serves it with engine.ServeConfigured, and the host builds its in-process copy with it.
func Build(settings map[string]string, log *slog.Logger) engine.Engine {
	return New(Options{Tool: outbound.Tool{URL: settings["runner_url"], Logger: log}, CallbackBaseURL: settings["callback_base_url"],
		Protocol: settings["protocol"], APIKey: settings["api_key"]})
}

// HealthPath is the runner's health route in the project's protocol: GET {RUNNER_URL}/health must
// answer 2xx for the engine to be ready.
const HealthPath = "/health"

// New returns a graph engine with opts.
func New(opts Options) *Engine {
	if opts.Protocol == "" {
		opts.Protocol = ProtocolReelforge
	}
	switch {
	case opts.HealthPath != "":
	case opts.Protocol == ProtocolLangGraph:
		opts.HealthPath = LangGraphHealthPath
	default:
		opts.HealthPath = HealthPath
	}
	opts.Tool = opts.Tool.WithDefaults(DefaultTimeout)
	return &Engine{opts: opts}
}

// Info describes the graph engine.
func (e *Engine) Info(context.Context) (*engine.Info, error) {
	return &engine.Info{Name: Name, Version: Version, APIVersion: engine.APIVersion,
		Capabilities: []string{engine.CapCallbacks, "resume", engine.CapCancel, engine.CapToolHealth}}, nil
}

// Health checks the runner (outbound.Tool.Health): VALIDATION_ERROR when no runner_url is set,
// GRAPH_RUNNER_ERROR when it does not answer, engine.ToolUnhealthy when GET HealthPath answers
// other than 2xx.
func (e *Engine) Health(ctx context.Context) error {
	return e.opts.Health(ctx, "graph.Health", errcode.GraphRunner,
		"runner_url is not set (RUNNER_URL)", "the agent graph runner does not answer")
}

// settings are the manifest settings of a graph workflow.
type settings struct {
	GraphID string `json:"graph_id"`
	// AssistantID is the LangGraph assistant (or graph id) a run starts; empty: GraphID. It may
	// name an environment variable in the manifest ({env: NAME, default: ...}).
	AssistantID string `json:"assistant_id"`
}

// runBody is what POST {RUNNER_URL}/run carries.
type runBody struct {
	RunID          string                `json:"run_id"`
	JobID          string                `json:"job_id"`
	WorkflowID     string                `json:"workflow_id"`
	GraphID        string                `json:"graph_id"`
	Inputs         map[string]any        `json:"inputs"`
	CallbackURL    string                `json:"callback_url"`
	UserContext    engine.UserContext    `json:"user_context"`
	ProjectContext engine.ProjectContext `json:"project_context"`
	ResumeInput    map[string]any        `json:"resume_input,omitempty"`
	Attempt        int                   `json:"attempt,omitempty"`
	// HostURL and Token let the graph read the owner's knowledge (POST {HostURL}/api/knowledge/context
	// with Authorization: Bearer {Token}) while the run lasts. Set after the job's request is
	// stored: the credential is a secret and never kept in the database.
	HostURL string `json:"reelforge_url,omitempty"`
	Token   string `json:"reelforge_token,omitempty"`
}

// jobRequest is a graph job's stored request: what was posted where, and whether the workflow has
// steps after the graph (MediaAfter: its generator steps), which the completed callback leaves to
// the next Run.
type jobRequest struct {
	URL        string  `json:"url"`
	Method     string  `json:"method"`
	Payload    runBody `json:"payload"`
	MediaAfter bool    `json:"media_after,omitempty"`
}

// graphOutputsKey holds, in the outputs of a completed summary step, the graph's outputs when the
// workflow's media steps are still to run after it (Callback, then Run: graphDone).
const graphOutputsKey = "graph_outputs"

// graphDone is the graph's outputs when req's trace holds the summary step completed with them:
// the runner finished and only the steps after the graph are left.
func graphDone(req *engine.RunRequest) (map[string]any, bool) {
	raw, ok := req.Completed[SummaryStepID]
	if !ok {
		return nil, false
	}
	var sum map[string]json.RawMessage
	var out map[string]any
	if json.Unmarshal(raw, &sum) != nil || json.Unmarshal(sum[graphOutputsKey], &out) != nil || out == nil {
		return nil, false
	}
	return out, true
}

// Run posts the run to the runner and answers StatusWaiting. See the package documentation.
func (e *Engine) Run(ctx context.Context, h engine.Host, req *engine.RunRequest) (*engine.RunResult, error) {
	var set settings
	if err := engine.DecodeRun(req, h, Name, &set); err != nil {
		return nil, err
	}
	if e.opts.URL == "" {
		return nil, errcode.New(errcode.GraphRunner, "the agent graph runner is not configured (set RUNNER_URL)")
	}
	if set.GraphID == "" {
		set.GraphID = req.Workflow.ID
	}
	switch e.opts.Protocol {
	case ProtocolReelforge:
		if out, done := graphDone(req); done {
			// The runner's completed callback handed the run back (StatusContinue): the graph's
			// part is done, the media steps are left.
			return e.withMedia(ctx, h, req, out)
		}
	case ProtocolLangGraph:
		res, err := e.runLangGraph(ctx, h, req, set)
		if err != nil || res.Status != engine.StatusCompleted {
			return res, err
		}
		return e.withMedia(ctx, h, req, res.Outputs)
	default:
		return nil, errcode.Newf(errcode.Validation, "the graph engine's protocol %q is neither %s nor %s (RUNNER_PROTOCOL)",
			e.opts.Protocol, ProtocolReelforge, ProtocolLangGraph)
	}
	inputs := req.MergedInputs()
	base := req.CallbackURL
	if base == "" {
		base = e.opts.CallbackBaseURL
	}
	body := runBody{
		RunID: req.RunID, WorkflowID: req.Workflow.ID, GraphID: set.GraphID, Inputs: inputs,
		CallbackURL: outbound.Join(base, engine.CallbackPathGraph), UserContext: req.User, ProjectContext: req.Project,
		ResumeInput: req.ResumeInput,
	}
	url := e.opts.URL + "/run"
	jobReq, err := json.Marshal(jobRequest{URL: url, Method: http.MethodPost, Payload: body,
		MediaAfter: len(afterGraph(req.Workflow.Steps)) > 0})
	if err != nil {
		return nil, errcode.E("graph.Run", errcode.Unknown, "", err)
	}
	job, err := h.CreateJob(ctx, &engine.JobRequest{RunID: req.RunID, StepID: SummaryStepID, Type: engine.JobGraph, Request: jobReq})
	if err != nil {
		return nil, err
	}
	// attempt counts the postings of this graph: a job created again after a time-out carries the
	// retry count on, and a run retried by hand has a higher attempt of its own.
	body.JobID, body.Attempt = job.JobID, max(req.Attempt, job.RetryCount+1)
	body.HostURL, body.Token = strings.TrimRight(base, "/"), req.Credential

	now := e.opts.Now().UTC()
	step := engine.TraceStep{StepID: SummaryStepID, StepName: "Agent graph runner", Agent: "graph_runner",
		Status: engine.StepRunning, Engine: Name, StartedAt: &now,
		Inputs: map[string]any{"graph_id": set.GraphID, "job_id": job.JobID, "inputs": inputs}}
	// The step and the progress are reported before the post: a quick runner's callback may come
	// before PostJSON returns, and what it reports must not be overwritten by "running".
	e.report(ctx, h, req.RunID, step)
	if err := h.ReportProgress(ctx, req.RunID, 10, SummaryStepID); err != nil {
		e.opts.Logger.Warn("host refused the progress", "run_id", req.RunID, "error", err)
	}
	ans, err := outbound.PostJSON(ctx, e.opts.HTTPClient, url, body, e.opts.Timeout)
	if err == nil && !ans.OK() {
		err = fmt.Errorf("runner answered %s", ans.Brief())
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, errcode.E("graph.Run", errcode.WorkflowCancelled, "the run was cancelled", ctx.Err())
		}
		e.opts.Logger.Warn("graph runner refused the run", "run_id", req.RunID, "job_id", job.JobID, "error", err)
		end := e.opts.Now().UTC()
		step.Status, step.CompletedAt = engine.StepFailed, &end
		step.Error = &engine.StepError{Code: string(errcode.GraphRunner), Message: "the agent graph runner did not accept the run"}
		e.report(ctx, h, req.RunID, step)
		return nil, errcode.E("graph.Run", errcode.GraphRunner, "the agent graph runner did not accept the run", err)
	}
	return &engine.RunResult{Status: engine.StatusWaiting}, nil
}

// Cancel asks the runner to stop the run (POST {RUNNER_URL}/cancel). It is best effort: a runner that
// is down or refuses is logged, not an error, since the host cancels the run either way.
func (e *Engine) Cancel(ctx context.Context, req *engine.CancelRequest) error {
	if req == nil || req.RunID == "" {
		return errcode.Invalid("run_id", "is required")
	}
	if e.opts.URL == "" {
		return nil
	}
	if e.opts.Protocol == ProtocolLangGraph {
		e.cancelLangGraph(ctx, req.RunID)
		return nil
	}
	body := map[string]any{"run_id": req.RunID, "job_ids": req.JobIDs}
	ans, err := outbound.PostJSON(ctx, e.opts.HTTPClient, e.opts.URL+"/cancel", body, e.opts.Timeout)
	if err == nil && !ans.OK() {
		err = fmt.Errorf("runner answered %s", ans.Brief())
	}
	if err != nil {
		e.opts.Logger.Info("graph runner cancel not confirmed", "run_id", req.RunID, "error", err)
	}
	return nil
}

func (e *Engine) report(ctx context.Context, h engine.Host, runID string, step engine.TraceStep) {
	if err := h.ReportStep(ctx, runID, step); err != nil {
		e.opts.Logger.Warn("host refused a trace step", "run_id", runID, "step_id", step.StepID, "error", err)
	}
}
