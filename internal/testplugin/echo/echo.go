// Package echo is a tiny engine for the tests of the plugin machinery (it is no product engine and
// has no engine entry; tests build its cmd/echo-plugin): each step of a run echoes the
// run's inputs as its outputs, and reports itself and the progress to the host.
//
// Inputs it understands, for tests: "probe" (Run makes the Host calls of a misbehaving plugin
// and returns what the host answered each: see trespass), "sleep_ms" (each step waits that long, or until the run is
// cancelled), "fail_code" (Run fails with that catalogue code), "generate" (each step asks the
// host's language model once, a call back into the host), and "ping_host" (Run only asks the
// host's language model once and returns: one round trip with one callback, for benchmarks).
//
// Settings (engine.Settings, from the engine entry) make it misbehave on purpose, for the host's
// handshake tests: "name" is the engine name its Info reports (default echo), "api_version" the
// contract version (default engine.APIVersion). "tool_url" makes it declare engine.CapToolHealth
// and check that address in Health as the shipped engines check theirs (outbound.Tool.Health, with
// "tool_health_path" as its health route; "unconfigured": it answers VALIDATION_ERROR), for the
// host's health tests.
package echo

import (
	"context"
	"strconv"
	"time"

	"github.com/reelforge/reelforge/internal/outbound"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// Version is the engine's version.
const Version = "0.1.0"

// Engine is the echo engine. It is read-only after New and safe for concurrent use.
type Engine struct {
	name       string
	api        int
	tool       outbound.Tool // tool_url and tool_health_path settings
	checksTool bool          // a tool_url is set ("unconfigured" included): Health checks the tool
}

var _ engine.Engine = (*Engine)(nil)

// New returns an echo engine, for engine.Serve, configured by the plugin's settings.
func New() engine.Engine {
	e := &Engine{name: "echo", api: engine.APIVersion}
	set := engine.Settings()
	if n := set["name"]; n != "" {
		e.name = n
	}
	if v, err := strconv.Atoi(set["api_version"]); err == nil {
		e.api = v
	}
	if u := set["tool_url"]; u != "unconfigured" {
		e.tool.URL = u
	}
	e.tool.HealthPath = set["tool_health_path"]
	e.tool = e.tool.WithDefaults(time.Second)
	e.checksTool = set["tool_url"] != ""
	return e
}

// Info describes the echo engine.
func (e *Engine) Info(context.Context) (*engine.Info, error) {
	caps := []string{engine.CapCancel}
	if e.checksTool {
		caps = append(caps, engine.CapToolHealth)
	}
	return &engine.Info{Name: e.name, Version: Version, APIVersion: e.api, Capabilities: caps}, nil
}

// Run echoes the inputs through every step of the workflow (one step "echo" when it has none).
func (e *Engine) Run(ctx context.Context, h engine.Host, req *engine.RunRequest) (*engine.RunResult, error) {
	const op = "echo.Run"
	if req.RunID == "" {
		return nil, errcode.Invalid("run_id", "is required")
	}
	if c, ok := req.Inputs["fail_code"].(string); ok && c != "" {
		return nil, errcode.E(op, errcode.Code(c), "echo was asked to fail", nil)
	}
	if probe, ok := req.Inputs["probe"].(map[string]any); ok {
		return &engine.RunResult{Status: engine.StatusCompleted, Outputs: map[string]any{"probe": trespass(ctx, h, req.RunID, probe)}}, nil
	}
	if _, ok := req.Inputs["ping_host"]; ok {
		g, err := h.Generate(ctx, &engine.GenerateRequest{Prompt: "ping"})
		if err != nil {
			return nil, err
		}
		return &engine.RunResult{Status: engine.StatusCompleted, Outputs: map[string]any{"text": g.Text}}, nil
	}
	steps := req.Workflow.Steps
	if len(steps) == 0 {
		steps = []engine.Step{{ID: "echo", Name: "Echo", Agent: "echo"}}
	}
	sleep := time.Duration(0)
	if ms, ok := req.Inputs["sleep_ms"].(float64); ok {
		sleep = time.Duration(ms * float64(time.Millisecond))
	}
	_, generate := req.Inputs["generate"]
	outputs := map[string]any{}
	for i, s := range steps {
		start := time.Now().UTC()
		step := engine.TraceStep{StepID: s.ID, StepName: s.Name, Agent: s.Agent, Status: engine.StepRunning,
			Inputs: req.Inputs, StartedAt: &start, Engine: "echo", Degraded: req.Degraded}
		if err := h.ReportStep(ctx, req.RunID, step); err != nil {
			return nil, err
		}
		if sleep > 0 {
			t := time.NewTimer(sleep)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, errcode.E(op, errcode.WorkflowCancelled, "", ctx.Err())
			}
		}
		if generate {
			if _, err := h.Generate(ctx, &engine.GenerateRequest{Prompt: "echo"}); err != nil {
				return nil, err
			}
		}
		end := time.Now().UTC()
		ms := float64(end.Sub(start)) / float64(time.Millisecond)
		step.Status, step.Outputs, step.CompletedAt, step.DurationMS = engine.StepCompleted, req.Inputs, &end, &ms
		if err := h.ReportStep(ctx, req.RunID, step); err != nil {
			return nil, err
		}
		if err := h.ReportProgress(ctx, req.RunID, float64(i+1)*100/float64(len(steps)), s.ID); err != nil {
			return nil, err
		}
		outputs[s.ID] = req.Inputs
	}
	return &engine.RunResult{Status: engine.StatusCompleted, Outputs: outputs}, nil
}

// trespass makes the Host calls a misbehaving plugin would, for the host's scoping tests: each
// names what probe gives (run: another run's id, job: a job of another run, user: another user's
// id, project: another project's id). It returns, per call, the error code the host answered, or
// "ok" (for search, "ok" and the hits).
func trespass(ctx context.Context, h engine.Host, runID string, probe map[string]any) map[string]any {
	str := func(k string) string { s, _ := probe[k].(string); return s }
	code := func(err error) string {
		if err != nil {
			return string(errcode.Of(err))
		}
		return "ok"
	}
	out := map[string]any{}
	if other := str("run"); other != "" {
		out["report_step"] = code(h.ReportStep(ctx, other, engine.TraceStep{StepID: "trespass", Status: engine.StepCompleted}))
		out["report_progress"] = code(h.ReportProgress(ctx, other, 50, "trespass"))
		_, err := h.CreateJob(ctx, &engine.JobRequest{RunID: other, Type: engine.JobGraph})
		out["create_job"] = code(err)
	}
	if job := str("job"); job != "" {
		_, err := h.WaitJob(ctx, job)
		out["wait_job"] = code(err)
	}
	if user := str("user"); user != "" {
		hits, err := h.Search(ctx, &engine.SearchRequest{UserID: user, Query: "secret", TopK: 5})
		out["search_user"] = code(err)
		texts := []any{}
		for _, hit := range hits {
			texts = append(texts, hit.ChunkText)
		}
		out["search_hits"] = texts
	}
	if project := str("project"); project != "" {
		_, err := h.Search(ctx, &engine.SearchRequest{ProjectID: project, Query: "secret", TopK: 5})
		out["search_project"] = code(err)
	}
	out["own_step"] = code(h.ReportStep(ctx, runID, engine.TraceStep{StepID: "probe", StepName: "Probe", Agent: "echo", Status: engine.StepCompleted}))
	return out
}

// Callback echoes the callback's payload as the run's outputs.
func (e *Engine) Callback(_ context.Context, _ engine.Host, req *engine.CallbackRequest) (*engine.RunResult, error) {
	return &engine.RunResult{Status: engine.StatusCompleted, Outputs: map[string]any{"payload": req.Payload}}, nil
}

// Cancel has nothing to stop: echo starts no outside work.
func (e *Engine) Cancel(context.Context, *engine.CancelRequest) error { return nil }

// Health is nil, or with a tool_url setting, the check of that tool (outbound.Tool.Health).
func (e *Engine) Health(ctx context.Context) error {
	if !e.checksTool {
		return nil
	}
	return e.tool.Health(ctx, "echo.Health", errcode.ExternalService, "tool_url is not set", "the echo tool does not answer")
}
