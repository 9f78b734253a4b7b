package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// Payload is the body of a graph-callback (SPEC.md, Inbound callbacks).
type Payload struct {
	RunID    string                `json:"run_id"`
	JobID    string                `json:"job_id"`
	Status   string                `json:"status"` // completed, failed, paused; running for progress
	Outputs  map[string]any        `json:"outputs"`
	Trace    []Step                `json:"trace"`
	Metadata Metadata              `json:"metadata"`
	Error    *engine.CallbackError `json:"error,omitempty"`
}

// Metadata carries the runner's totals.
type Metadata struct {
	TotalTokens  *int64   `json:"total_tokens,omitempty"`
	TotalCostUSD *float64 `json:"total_cost_usd,omitempty"`
	DurationMS   *float64 `json:"duration_ms,omitempty"`
	Progress     *float64 `json:"progress,omitempty"`
}

// Step is one trace step as the runner sends it: an engine.TraceStep but for three fields, which
// shadow the embedded ones (encoding/json reads the shallower field). Times are strings so that
// runners writing ISO 8601 without a zone, or with fractional seconds, are accepted; tokens may come
// as a float. The runner's engine and degraded, if it sends them, are not kept (traceStep).
type Step struct {
	engine.TraceStep
	StartedAt   string   `json:"started_at,omitempty"`
	CompletedAt string   `json:"completed_at,omitempty"`
	TokensUsed  *float64 `json:"tokens_used,omitempty"`
}

// Callback applies a graph-callback to the run. See the package documentation.
func (e *Engine) Callback(ctx context.Context, h engine.Host, req *engine.CallbackRequest) (*engine.RunResult, error) {
	var p Payload
	if err := engine.DecodeCallback(req, h, Name, &p); err != nil {
		return nil, err
	}
	runID := req.RunID
	if runID == "" {
		runID = req.Job.RunID
	}
	if p.RunID != "" && runID != "" && p.RunID != runID {
		return nil, errcode.Invalid("run_id", "does not match the job's run")
	}
	if p.JobID != "" && req.Job.JobID != "" && p.JobID != req.Job.JobID {
		return nil, errcode.Invalid("job_id", "does not match the job")
	}
	if runID == "" {
		runID = p.RunID
	}
	if runID == "" {
		return nil, errcode.Invalid("run_id", "is required")
	}

	var ownTokens bool
	pending := ""
	failedStep := ""
	for i, s := range p.Trace {
		st := e.traceStep(i, s)
		if st.TokensUsed != nil || st.CostUSD != nil {
			ownTokens = true
		}
		if pending == "" && (st.Status == engine.StepPending || st.Status == engine.StepRunning) &&
			(s.Agent == "human_input" || st.Status == engine.StepPending) {
			pending = st.StepID
		}
		if st.Status == engine.StepFailed && failedStep == "" {
			failedStep = st.StepID
		}
		if err := h.ReportStep(ctx, runID, st); err != nil {
			return nil, err
		}
	}

	status := strings.ToLower(strings.TrimSpace(p.Status))
	if status == "running" || status == "pending" {
		if p.Metadata.Progress != nil {
			pr := min(max(*p.Metadata.Progress, 0), 99)
			if err := h.ReportProgress(ctx, runID, pr, lastStepID(p.Trace)); err != nil {
				return nil, err
			}
		}
		return &engine.RunResult{Status: engine.StatusWaiting}, nil
	}

	summary := e.summaryStep(p, req.Job.JobID, ownTokens)
	res := &engine.RunResult{}
	switch status {
	case "completed", "success", "succeeded":
		res.Status, res.Outputs = engine.StatusCompleted, p.Outputs
		if res.Outputs == nil {
			res.Outputs = map[string]any{}
		}
		summary.Status = engine.StepCompleted
		var jr jobRequest
		if json.Unmarshal(req.Job.Request, &jr) == nil && jr.MediaAfter {
			// The media steps are left: the next Run makes them from the graph's outputs.
			summary.Outputs[graphOutputsKey] = res.Outputs
			res.Status, res.Outputs = engine.StatusContinue, nil
		}
	case "paused", "awaiting_input", "interrupted":
		stepID := pending
		if stepID == "" {
			stepID = DefaultReviewStep
		}
		prompt, _ := p.Outputs["prompt"].(string)
		if prompt == "" {
			prompt = "The agent graph awaits review: resume the run with your input."
		}
		res.Status, res.Outputs = engine.StatusPaused, p.Outputs
		res.Awaiting = &engine.Awaiting{StepID: stepID, Prompt: prompt}
		summary.Status = engine.StepPending
	case "failed", "error", "timeout", "cancelled":
		code := errcode.AgentExecutionFailed
		msg := "the agent graph failed"
		stepID := failedStep
		if p.Error != nil {
			if c := errcode.Code(p.Error.Code); p.Error.Code != "" && errcode.Known(c) && c != errcode.Unknown {
				code = c
			}
			if p.Error.Message != "" {
				msg = p.Error.Message
			}
			if p.Error.StepID != "" {
				stepID = p.Error.StepID
			}
		}
		res.Status = engine.StatusFailed
		res.Error = &engine.RunError{Code: string(code), Message: msg, StepID: stepID}
		summary.Status = engine.StepFailed
		summary.Error = &engine.StepError{Code: string(code), Message: msg}
	default:
		return nil, errcode.Invalid("status", fmt.Sprintf("%q is not completed, failed, paused or running", p.Status))
	}
	if summary.Status != engine.StepPending {
		end := e.opts.Now().UTC()
		summary.CompletedAt = &end
	}
	if err := h.ReportStep(ctx, runID, summary); err != nil {
		return nil, err
	}
	return res, nil
}

// summaryStep is the engine's own step with the runner's totals. Tokens and cost are put on it only
// when the trace steps carry none, so a sum over the trace does not count them twice; the totals are
// always in its outputs.
func (e *Engine) summaryStep(p Payload, jobID string, ownTokens bool) engine.TraceStep {
	out := map[string]any{"steps": len(p.Trace)}
	if m := p.Metadata; m.TotalTokens != nil {
		out["total_tokens"] = *m.TotalTokens
	}
	if m := p.Metadata; m.TotalCostUSD != nil {
		out["total_cost_usd"] = *m.TotalCostUSD
	}
	if m := p.Metadata; m.DurationMS != nil {
		out["duration_ms"] = *m.DurationMS
	}
	st := engine.TraceStep{StepID: SummaryStepID, StepName: "Agent graph runner", Agent: "graph_runner",
		Engine: Name, Inputs: map[string]any{"job_id": jobID}, Outputs: out, DurationMS: p.Metadata.DurationMS}
	if !ownTokens {
		st.TokensUsed, st.CostUSD = p.Metadata.TotalTokens, p.Metadata.TotalCostUSD
	}
	if len(p.Trace) > 0 {
		if t := parseTime(p.Trace[0].StartedAt); t != nil {
			st.StartedAt = t
		}
	}
	return st
}

func (e *Engine) traceStep(i int, s Step) engine.TraceStep {
	st := s.TraceStep
	st.Status, st.StartedAt, st.CompletedAt = stepStatus(s.Status), parseTime(s.StartedAt), parseTime(s.CompletedAt)
	st.Engine, st.Degraded = Name, ""
	if st.StepID == "" {
		st.StepID = fmt.Sprintf("graph_step_%d", i+1)
	}
	if st.StepName == "" {
		st.StepName = st.StepID
	}
	if st.Agent == "" {
		st.Agent = "graph_agent"
	}
	if st.Inputs == nil {
		st.Inputs = map[string]any{}
	}
	if s.TokensUsed != nil {
		n := int64(*s.TokensUsed)
		st.TokensUsed = &n
	}
	if st.DurationMS == nil && st.StartedAt != nil && st.CompletedAt != nil {
		d := float64(st.CompletedAt.Sub(*st.StartedAt).Milliseconds())
		st.DurationMS = &d
	}
	if st.Status == engine.StepFailed && st.Error == nil {
		st.Error = &engine.StepError{Code: string(errcode.AgentExecutionFailed), Message: "the agent step failed"}
	}
	return st
}

func stepStatus(s string) string {
	switch s = strings.ToLower(strings.TrimSpace(s)); s {
	case engine.StepPending, engine.StepRunning, engine.StepCompleted, engine.StepFailed, engine.StepSkipped:
		return s
	case "success", "succeeded", "done":
		return engine.StepCompleted
	case "error":
		return engine.StepFailed
	case "waiting", "paused":
		return engine.StepPending
	}
	return engine.StepCompleted
}

func lastStepID(trace []Step) string {
	if len(trace) == 0 {
		return SummaryStepID
	}
	return trace[len(trace)-1].StepID
}

var timeLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999"}

// parseTime reads ISO 8601 with or without a zone (UTC assumed); nil when empty or unreadable.
func parseTime(s string) *time.Time {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			t = t.UTC()
			return &t
		}
	}
	return nil
}
