package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/reelforge/reelforge/host/runs"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// The routes SPEC.md only names, each routed to the workflow it names and answered like
// POST /api/workflow/start: {success, run_id, workflow, status, message}; poll
// /api/workflow/status/:runId and /api/workflow/result/:runId.
//
//	POST /api/generate/script    -> script_review (pauses for a reviewer: /api/workflow/resume/:runId)
//	POST /api/generate/visual    -> graphic
//	POST /api/voiceover/generate -> voiceover
//	POST /api/langgraph/run      -> {workflow}, which must run on the graph engine (agent graph runner)
func (s *Server) namedRoutes(r fiber.Router) {
	s.batchRoutes(r)
	if s.Runs == nil {
		return
	}
	r.Post("/generate/script", s.namedRun("script_review"))
	r.Post("/generate/visual", s.namedRun("graphic"))
	r.Post("/voiceover/generate", s.namedRun("voiceover"))
	r.Post("/langgraph/run", s.namedRun(""))
}

// namedInput is {inputs?, project_id|projectId?, workflow? (langgraph only)} plus, when inputs is
// absent, the workflow's inputs at the top level.
type namedInput struct {
	projectRef
	Workflow string         `json:"workflow"`
	GraphID  string         `json:"graph_id"`
	Inputs   map[string]any `json:"inputs"`
}

func (s *Server) namedRun(workflow string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		var in namedInput
		if err := decode(c, &in); err != nil {
			return err
		}
		if in.Inputs == nil {
			var top map[string]any
			if err := decode(c, &top); err != nil {
				return err
			}
			for _, k := range []string{"project_id", "projectId", "workflow", "graph_id", "inputs"} {
				delete(top, k)
			}
			in.Inputs = top
		}
		wf := workflow
		if wf == "" { // langgraph/run: a workflow of the graph engine
			wf = firstSet(in.Workflow, in.GraphID)
			if err := fieldLen("workflow", wf, true, 100); err != nil {
				return err
			}
			m, ok := s.Runs.Manifests().Get(wf)
			if !ok {
				return errcode.New(errcode.WorkflowNotFound, "Workflow not found: "+wf)
			}
			if m.Engine != "graph" {
				return errcode.Invalid("workflow", "must be a workflow of the graph engine")
			}
		}
		r, err := s.Runs.Start(s.ctx(c), runs.StartParams{Workflow: wf, Inputs: in.Inputs, User: principal(c),
			ProjectID: in.id(), Trigger: store.TriggerAPI})
		if err != nil {
			return err
		}
		return okTop(c, fiber.StatusOK, fiber.Map{"run_id": r.ID, "workflow": r.WorkflowID, "status": r.Status,
			"message": "Workflow started"})
	}
}
