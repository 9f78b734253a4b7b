package api

import (
	"context"

	"github.com/danielgtaylor/huma/v2"

	"github.com/reelforge/reelforge/host/runs"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// namedOperations declares the routes SPEC.md only names (typed: operations.go), each routed to
// the workflow it names and answered like POST /api/workflow/start: {success, run_id, workflow,
// status, message}; poll /api/workflow/status/{runId} and /api/workflow/result/{runId}.
//
//	POST /api/generate/script    -> script_review (pauses for a reviewer: /api/workflow/resume/{runId})
//	POST /api/generate/visual    -> graphic
//	POST /api/voiceover/generate -> voiceover
//	POST /api/langgraph/run      -> {workflow}, which must run on the graph engine (agent graph runner)
func (s *Server) namedOperations(api huma.API) {
	const tag = "Workflow"
	errs := []int{403, 404, 409}
	register(api, op{Method: "POST", Path: "/api/generate/script", Tag: tag, Summary: "Write a script (starts script_review)",
		Errors: errs}, s.namedRun("script_review"))
	register(api, op{Method: "POST", Path: "/api/generate/visual", Tag: tag, Summary: "Make a visual (starts graphic)",
		Errors: errs}, s.namedRun("graphic"))
	register(api, op{Method: "POST", Path: "/api/voiceover/generate", Tag: tag, Summary: "Make a voice-over (starts voiceover)",
		Errors: errs}, s.namedRun("voiceover"))
	register(api, op{Method: "POST", Path: "/api/langgraph/run", Tag: tag, Summary: "Start a workflow of the graph engine",
		Errors: errs}, s.namedRun(""))
}

// namedInput is {inputs?, project_id|projectId?, workflow? (langgraph only)} plus, when inputs is
// absent, the workflow's inputs at the top level (read from the body as it came).
type namedInput struct {
	Body *namedBody // optional: no body starts the workflow with no inputs
}

type namedBody struct {
	ProjectID  string         `json:"project_id,omitempty" doc:"a project of the caller's (403 otherwise)"`
	ProjectID2 string         `json:"projectId,omitempty" doc:"alias of project_id"`
	Workflow   string         `json:"workflow,omitempty" maxLength:"100" doc:"/api/langgraph/run only (required there, here or as graph_id): a manifest whose engine is graph"`
	GraphID    string         `json:"graph_id,omitempty" maxLength:"100" doc:"alias of workflow"`
	Inputs     map[string]any `json:"inputs,omitempty" doc:"the workflow's inputs (or given at the top level)"`
}

// namedKeys are the body's own fields, which are not inputs when the inputs are at the top level.
var namedKeys = []string{"project_id", "projectId", "workflow", "graph_id", "inputs"}

func (s *Server) namedRun(workflow string) func(context.Context, *namedInput) (*Top[StartedRun], error) {
	return func(ctx context.Context, in *namedInput) (*Top[StartedRun], error) {
		rs, err := s.runService()
		if err != nil {
			return nil, err
		}
		b := in.Body
		if b == nil {
			b = &namedBody{}
		}
		inputs := b.Inputs
		if inputs == nil {
			// The body is an object (huma checked it): its other members are the inputs.
			inputs = map[string]any{}
			_ = decodeJSON(requestBody(ctx), &inputs)
			for _, k := range namedKeys {
				delete(inputs, k)
			}
		}
		wf := workflow
		if wf == "" { // langgraph/run: a workflow of the graph engine
			if wf = firstSet(b.Workflow, b.GraphID); wf == "" {
				return nil, errcode.Invalid("workflow", "is required")
			}
			m, ok := rs.Manifests().Get(wf)
			if !ok {
				return nil, errcode.New(errcode.WorkflowNotFound, "Workflow not found: "+wf)
			}
			if m.Engine != "graph" {
				return nil, errcode.Invalid("workflow", "must be a workflow of the graph engine")
			}
		}
		r, err := rs.Start(ctx, runs.StartParams{Workflow: wf, Inputs: inputs, User: caller(ctx),
			ProjectID: firstSet(b.ProjectID, b.ProjectID2), Trigger: store.TriggerAPI})
		if err != nil {
			return nil, err
		}
		return startedAnswer(r)
	}
}
