package graph

import (
	"context"
	"encoding/json"
	"maps"

	"github.com/reelforge/reelforge/plugins/node"
	"github.com/reelforge/reelforge/sdk/engine"
)

// withMedia finishes a run whose graph completed with outputs: the workflow's `generator` steps
// (a short drama's render) and the steps that depend on them run after the graph, on its outputs,
// through the node engine's agents: the graph writes the text, the host's generator jobs
// (Host.CreateJob, dispatched to the generators plugin) make the media, and the workflow's
// `assemble` puts them together, exactly as when node runs the whole workflow. The steps before
// them are the graph's: they are handed to node as completed, the ones the media steps depend on
// with the graph's outputs (its script), the others marked done by the graph.
//
// A workflow without generator steps (live) ends with the graph's outputs as they are.
func (e *Engine) withMedia(ctx context.Context, h engine.Host, req *engine.RunRequest, outputs map[string]any) (*engine.RunResult, error) {
	after := afterGraph(req.Workflow.Steps)
	if len(after) == 0 {
		return &engine.RunResult{Status: engine.StatusCompleted, Outputs: outputs}, nil
	}
	feeds := map[string]bool{}
	for _, s := range req.Workflow.Steps {
		if after[s.ID] {
			for _, d := range s.DependsOn {
				feeds[d] = true
			}
		}
	}
	graphOut, err := json.Marshal(outputs)
	if err != nil {
		return nil, err
	}
	marker, _ := json.Marshal(map[string]any{"done_by": "graph"}) // a map of a string: it marshals
	rest := *req
	rest.ResumeInput = nil
	rest.Completed = maps.Clone(req.Completed)
	if rest.Completed == nil {
		rest.Completed = map[string]json.RawMessage{}
	}
	for _, s := range req.Workflow.Steps {
		switch {
		case after[s.ID]:
			// Media steps keep what they completed before (a recovery): node skips those.
		case feeds[s.ID]:
			rest.Completed[s.ID] = graphOut
		default:
			rest.Completed[s.ID] = marker
		}
	}
	res, err := node.New(node.Options{Logger: e.opts.Logger, Now: e.opts.Now}).Run(ctx, h, &rest)
	if err != nil || res == nil || res.Status != engine.StatusCompleted {
		return res, err
	}
	// The graph's outputs, then what the media steps and assemble made (they win: the script of
	// the graph is in both).
	out := maps.Clone(outputs)
	if out == nil {
		out = map[string]any{}
	}
	for k, v := range res.Outputs {
		if _, isGraphStep := rest.Completed[k]; isGraphStep && !after[k] {
			continue // the graph's outputs again, under a step the graph stood in for
		}
		out[k] = v
	}
	res.Outputs = out
	return res, nil
}

// afterGraph is the set of steps that run after the graph: every generator step and every step
// that depends on one, directly or not.
func afterGraph(steps []engine.Step) map[string]bool {
	after := map[string]bool{}
	for changed := true; changed; {
		changed = false
		for _, s := range steps {
			if after[s.ID] {
				continue
			}
			in := s.Agent == "generator"
			for _, d := range s.DependsOn {
				in = in || after[d]
			}
			if in {
				after[s.ID], changed = true, true
			}
		}
	}
	return after
}
