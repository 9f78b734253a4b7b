package runs

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/reelforge/reelforge/host/manifest"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// Warning is something a completed run could not do or did not use: an optional step that was
// skipped for an error, an input its workflow does not declare. A run's outputs carry them under
// "warnings", and the status and result routes at the top level.
type Warning struct {
	StepID  string `json:"step_id,omitempty"`
	Input   string `json:"input,omitempty"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// judge decides what a run whose engine reports it completed comes to. This is the one place
// for every engine (node in process or as a plugin, and the external tools): a run that lacks
// an output its manifest names as the product fails with the error of the step that should have
// made it; otherwise it completes, and its outputs get the warnings (skipped optional steps,
// ignored inputs).
func (s *Service) judge(ctx context.Context, runID string, out map[string]any) (map[string]any, *engine.RunError) {
	r, err := s.st.GetRun(ctx, runID)
	if err != nil {
		return out, nil // the guarded update that follows finds the same: nothing to judge
	}
	m, _ := s.Manifests().Get(r.WorkflowID)
	trace := s.traceSteps(ctx, runID)
	if m != nil {
		for _, p := range m.Product {
			if hasOutput(out, p) {
				continue
			}
			return out, productError(m, p, trace)
		}
	}
	var warnings []Warning
	for _, ts := range trace {
		if ts.Status == engine.StepSkipped && ts.Error != nil {
			warnings = append(warnings, Warning{StepID: ts.StepID, Code: ts.Error.Code,
				Message: fmt.Sprintf("step %q was skipped: %s", ts.StepID, ts.Error.Message)})
		}
	}
	if m != nil {
		warnings = append(warnings, IgnoredInputs(m, r.Inputs, r.ResumeInput)...)
	}
	if len(warnings) > 0 {
		out["warnings"] = warnings
	}
	return out, nil
}

// IgnoredInputs warns of each input of a run that its workflow m does not declare: it is not an
// error (the scheduler and automation tools send fields of their own), but nothing uses it. The
// keys of resumed, the input a paused run was resumed with (merged into its inputs), are not
// warned of: they answer the step that asked (a human step, a graph's interrupt), which used them.
func IgnoredInputs(m *manifest.Manifest, inputs, resumed json.RawMessage) []Warning {
	var in, answer map[string]any
	if json.Unmarshal(inputs, &in) != nil {
		return nil
	}
	_ = json.Unmarshal(resumed, &answer) // none (nil or not an object): every key is the run's own
	var names []string
	for k := range in {
		if _, given := answer[k]; !given && !m.Declares(k) {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	out := make([]Warning, 0, len(names))
	for _, k := range names {
		out = append(out, Warning{Input: k, Code: string(errcode.Validation),
			Message: fmt.Sprintf("input %q is not an input of workflow %s: ignored", k, m.ID)})
	}
	return out
}

// hasOutput reports whether the run's outputs hold product p: a non-empty string at the top level,
// among the assets the node engine assembles, or in the outputs of p's step.
func hasOutput(out map[string]any, p manifest.Product) bool {
	for _, where := range []any{out, out["assets"], out[p.Step]} {
		if m, ok := where.(map[string]any); ok {
			if v, ok := m[p.Output].(string); ok && strings.TrimSpace(v) != "" {
				return true
			}
		}
	}
	return false
}

// productError is the error of a run that lacks product p: that of p's step when it was skipped
// or failed, else that of the first step skipped for an error (what it depended on), else one
// saying the output is missing.
func productError(m *manifest.Manifest, p manifest.Product, trace []engine.TraceStep) *engine.RunError {
	stepErr := func(ts engine.TraceStep) *engine.RunError {
		return &engine.RunError{Code: ts.Error.Code, StepID: ts.StepID, Message: fmt.Sprintf(
			"step %q, which makes the product %s, %s: %s", ts.StepID, p.Output, ts.Status, ts.Error.Message)}
	}
	for _, ts := range trace {
		if ts.StepID == p.Step && ts.Error != nil {
			return stepErr(ts)
		}
	}
	for _, ts := range trace {
		if ts.Status == engine.StepSkipped && ts.Error != nil {
			return stepErr(ts)
		}
	}
	return &engine.RunError{Code: string(errcode.WorkflowStepFailed), StepID: p.Step, Message: fmt.Sprintf(
		"the run ended without %s, the product of workflow %s (step %q)", p.Output, m.ID, p.Step)}
}

// traceSteps decodes the run's stored trace.
func (s *Service) traceSteps(ctx context.Context, runID string) []engine.TraceStep {
	rows, err := s.st.ListTraceSteps(ctx, runID)
	if err != nil {
		return nil
	}
	out := make([]engine.TraceStep, 0, len(rows))
	for _, row := range rows {
		var ts engine.TraceStep
		if json.Unmarshal(row.Step, &ts) == nil {
			out = append(out, ts)
		}
	}
	return out
}

// WarningsOf returns the warnings a completed run's outputs carry (nil when none).
func WarningsOf(r *store.Run) json.RawMessage {
	if r.Status != store.RunCompleted || len(r.Outputs) == 0 {
		return nil
	}
	var out struct {
		Warnings json.RawMessage `json:"warnings"`
	}
	if json.Unmarshal(r.Outputs, &out) != nil || len(out.Warnings) == 0 || string(out.Warnings) == "null" {
		return nil
	}
	return out.Warnings
}
