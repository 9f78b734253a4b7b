package api

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/reelforge/reelforge/host/runs"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/sdk/errcode"
)

func (s *Server) workflowRoutes(r fiber.Router) {
	r.Post("/workflow/start", s.startRun)
	r.Get("/workflow/status/:runId", s.runStatus)
	r.Get("/workflow/result/:runId", s.runResult)
	r.Get("/workflow/trace/:runId", s.runTrace)
	r.Post("/workflow/cancel/:runId", s.cancelRun)
	r.Post("/workflow/resume/:runId", s.resumeRun)
	r.Post("/workflow/retry/:runId", s.retryRun)
	r.Get("/workflow/runs", s.listRuns)
	r.Delete("/workflow/runs/:runId", s.deleteRun)
	r.Get("/workflow/manifests", s.listManifests)
	r.Get("/workflow/voices", s.listVoices)
	r.Post("/orchestrator/run", s.orchestratorRun)
}

func (s *Server) runService() (*runs.Service, error) {
	if s.Runs == nil {
		return nil, errcode.New(errcode.ResourceExhausted, "Workflow runs are not available")
	}
	return s.Runs, nil
}

type startInput struct {
	Workflow       string         `json:"workflow"`
	WorkflowID     string         `json:"workflow_id"`
	ProjectID      string         `json:"project_id"`
	StrategyTaskID string         `json:"strategy_task_id"`
	Inputs         map[string]any `json:"inputs"`
	Trigger        string         `json:"trigger"`
}

// readStart decodes the body of a route that starts a run. Both routes take the workflow as
// "workflow" or "workflow_id"; the route's own field (the one errors name) wins when both are set.
// The workflow found is in both fields of the result.
func (s *Server) readStart(c *fiber.Ctx, field string) (*runs.Service, startInput, error) {
	rs, err := s.runService()
	if err != nil {
		return nil, startInput{}, err
	}
	var in startInput
	if err := decode(c, &in); err != nil {
		return nil, startInput{}, err
	}
	wf, other := in.Workflow, in.WorkflowID
	if field == "workflow_id" {
		wf, other = other, wf
	}
	if wf == "" {
		wf = other
	}
	if err := fieldLen(field, wf, true, 100); err != nil {
		return nil, startInput{}, err
	}
	in.Workflow, in.WorkflowID = wf, wf
	return rs, in, nil
}

func (s *Server) startRun(c *fiber.Ctx) error {
	rs, in, err := s.readStart(c, "workflow")
	if err != nil {
		return err
	}
	r, err := rs.Start(s.ctx(c), runs.StartParams{Workflow: in.Workflow, Inputs: in.Inputs, User: principal(c),
		ProjectID: in.ProjectID, StrategyTaskID: in.StrategyTaskID, Trigger: store.TriggerAPI})
	if err != nil {
		return err
	}
	return okTop(c, fiber.StatusOK, fiber.Map{"run_id": r.ID, "workflow": r.WorkflowID, "status": r.Status,
		"message": "Workflow started"})
}

// orchestratorRun is the automation timer's route: POST /api/orchestrator/run {workflow_id, inputs, trigger}.
func (s *Server) orchestratorRun(c *fiber.Ctx) error {
	rs, in, err := s.readStart(c, "workflow_id")
	if err != nil {
		return err
	}
	trigger := in.Trigger
	switch {
	case trigger == "":
		trigger = store.TriggerScheduler
	case !slices.Contains(store.Triggers, trigger):
		return errcode.Invalid("trigger", "must be one of "+strings.Join(store.Triggers, ", "))
	}
	r, err := rs.Start(s.ctx(c), runs.StartParams{Workflow: in.WorkflowID, Inputs: in.Inputs, User: principal(c),
		ProjectID: in.ProjectID, StrategyTaskID: in.StrategyTaskID, Trigger: trigger, TriggeredBy: "orchestrator"})
	if err != nil {
		return err
	}
	return okTop(c, fiber.StatusOK, fiber.Map{"run_id": r.ID, "workflow": r.WorkflowID, "workflow_id": r.WorkflowID,
		"status": r.Status, "trigger": r.Trigger, "message": "Workflow started"})
}

func (s *Server) loadRun(c *fiber.Ctx) (*runs.Service, *store.Run, error) {
	rs, err := s.runService()
	if err != nil {
		return nil, nil, err
	}
	r, err := rs.Get(s.ctx(c), principal(c), c.Params("runId"))
	return rs, r, err
}

func raw(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

// failedStep is the step a run is at: for a failed run the step its error names (a run failed
// for its product after its last steps reported progress would otherwise show those), else the
// last step reported.
func failedStep(r *store.Run) string {
	if r.Status == store.RunFailed && len(r.Error) > 0 {
		var e struct {
			StepID string `json:"step_id"`
		}
		if json.Unmarshal(r.Error, &e) == nil && e.StepID != "" {
			return e.StepID
		}
	}
	return r.CurrentStep
}

// runView is the status shape of a run.
func runView(r *store.Run) fiber.Map {
	m := fiber.Map{"run_id": r.ID, "workflow": r.WorkflowID, "status": r.Status, "progress": r.Progress,
		"current_step": failedStep(r), "created_at": r.CreatedAt, "updated_at": r.UpdatedAt,
		"trigger": r.Trigger, "engine": r.Engine, "attempt": r.Attempt}
	if r.ProjectID != "" {
		m["project_id"] = r.ProjectID
	}
	if r.TriggeredBy != "" {
		m["triggered_by"] = r.TriggeredBy
	}
	for k, v := range map[string]json.RawMessage{"inputs": r.Inputs, "user_context": r.UserContext, "project_context": r.ProjectContext} {
		if len(v) > 0 {
			m[k] = v
		}
	}
	if r.Degraded != "" {
		m["degraded"] = r.Degraded
	}
	if r.StartedAt != nil {
		m["started_at"] = r.StartedAt
	}
	if r.CompletedAt != nil {
		m["completed_at"] = r.CompletedAt
	}
	if r.Status == store.RunPaused && len(r.Awaiting) > 0 {
		m["awaiting"] = raw(r.Awaiting)
	}
	if (r.Status == store.RunFailed || r.Status == store.RunCancelled) && len(r.Error) > 0 {
		m["error"] = raw(r.Error)
	}
	if w := runs.WarningsOf(r); w != nil {
		m["warnings"] = w
	}
	return m
}

func (s *Server) runStatus(c *fiber.Ctx) error {
	rs, r, err := s.loadRun(c)
	if err != nil {
		return err
	}
	v := runView(r)
	jobs, err := rs.Jobs(s.ctx(c), r.ID)
	if err != nil {
		return err
	}
	v["jobs"] = jobs
	return okTop(c, fiber.StatusOK, v)
}

func (s *Server) runResult(c *fiber.Ctx) error {
	rs, r, err := s.loadRun(c)
	if err != nil {
		return err
	}
	body := fiber.Map{"run_id": r.ID, "workflow": r.WorkflowID, "status": r.Status, "progress": r.Progress}
	switch r.Status {
	case store.RunCompleted, store.RunFailed, store.RunCancelled:
		trace, err := rs.Trace(s.ctx(c), r.ID)
		if err != nil {
			return err
		}
		live, err := s.liveOutputs(c, r.UserID, append([]json.RawMessage{r.Outputs}, trace...))
		if err != nil {
			return err
		}
		r.Outputs, trace = live[0], live[1:]
		body["trace"] = trace
		if r.Status == store.RunCompleted {
			out := raw(r.Outputs)
			if out == nil {
				out = fiber.Map{}
			}
			body["outputs"] = out
			if w := runs.WarningsOf(r); w != nil {
				body["warnings"] = w
			}
		} else {
			body["error"] = raw(r.Error)
		}
		if r.CompletedAt != nil {
			body["completed_at"] = r.CompletedAt
		}
	case store.RunPaused:
		body["message"] = "Run is paused, waiting for input"
		body["awaiting"] = raw(r.Awaiting)
	default:
		body["message"] = "Run is " + r.Status + ", result not ready yet"
	}
	return okTop(c, fiber.StatusOK, body)
}

func (s *Server) runTrace(c *fiber.Ctx) error {
	rs, r, err := s.loadRun(c)
	if err != nil {
		return err
	}
	trace, err := rs.Trace(s.ctx(c), r.ID)
	if err != nil {
		return err
	}
	if trace, err = s.liveOutputs(c, r.UserID, trace); err != nil {
		return err
	}
	return okTop(c, fiber.StatusOK, fiber.Map{"run_id": r.ID, "status": r.Status, "trace": trace})
}

func (s *Server) cancelRun(c *fiber.Ctx) error {
	rs, err := s.runService()
	if err != nil {
		return err
	}
	r, err := rs.Cancel(s.ctx(c), principal(c), c.Params("runId"))
	if err != nil {
		return err
	}
	return okTop(c, fiber.StatusOK, fiber.Map{"run_id": r.ID, "status": r.Status, "message": "Run cancelled"})
}

func (s *Server) resumeRun(c *fiber.Ctx) error {
	rs, err := s.runService()
	if err != nil {
		return err
	}
	var in struct {
		Input map[string]any `json:"input"`
	}
	if err := decode(c, &in); err != nil {
		return err
	}
	r, err := rs.Resume(s.ctx(c), principal(c), c.Params("runId"), in.Input)
	if err != nil {
		return err
	}
	return okTop(c, fiber.StatusOK, fiber.Map{"run_id": r.ID, "status": r.Status, "message": "Run resumed"})
}

func (s *Server) retryRun(c *fiber.Ctx) error {
	rs, err := s.runService()
	if err != nil {
		return err
	}
	r, err := rs.Retry(s.ctx(c), principal(c), c.Params("runId"))
	if err != nil {
		return err
	}
	return okTop(c, fiber.StatusOK, fiber.Map{"run_id": r.ID, "status": r.Status, "attempt": r.Attempt,
		"message": "Run retried from its failed step"})
}

func (s *Server) listRuns(c *fiber.Ctx) error {
	rs, err := s.runService()
	if err != nil {
		return err
	}
	page, limit, offset, err := paging(c)
	if err != nil {
		return err
	}
	status := c.Query("status")
	switch status {
	case "", store.RunPending, store.RunRunning, store.RunCompleted, store.RunFailed, store.RunCancelled, store.RunPaused:
	default:
		return errcode.Invalid("status", "must be a run state")
	}
	if err := fieldLen("workflow", c.Query("workflow"), false, 100); err != nil {
		return err
	}
	list, total, err := rs.List(s.ctx(c), store.ListRunsParams{UserID: principal(c).UserID, Status: status,
		WorkflowID: c.Query("workflow"), Limit: limit, Offset: offset})
	if err != nil {
		return err
	}
	// The page's runs are all the caller's: their deleted files are found in one query.
	outputs := make([]json.RawMessage, len(list))
	for i := range list {
		outputs[i] = list[i].Outputs
	}
	live, err := s.liveOutputs(c, principal(c).UserID, outputs)
	if err != nil {
		return err
	}
	items := make([]fiber.Map, 0, len(list))
	for i := range list {
		r := &list[i]
		r.Outputs = live[i]
		v := runView(r)
		maps.Copy(v, runSummary(r))
		items = append(items, v)
	}
	return listing(c, items, total, page, limit)
}

// liveOutputs is docs of runs of userID without the files of theirs that were deleted since (null
// in their place): a run's answer never names a dead URL. Without the content service, docs as
// they are.
func (s *Server) liveOutputs(c *fiber.Ctx, userID string, docs []json.RawMessage) ([]json.RawMessage, error) {
	if s.Content == nil {
		return docs, nil
	}
	return s.Content.LiveOutputs(s.ctx(c), userID, docs...)
}

// runSummary is what a library shows of a run: its title, its product's URL (the video, else the
// picture, else the narration), the product's cover and length. Fields it lacks are null.
func runSummary(r *store.Run) fiber.Map {
	var out map[string]any
	_ = json.Unmarshal(r.Outputs, &out) // no outputs (yet): an empty summary
	assets, _ := out["assets"].(map[string]any)
	pick := func(keys ...string) any {
		for _, k := range keys {
			for _, m := range []map[string]any{assets, out} {
				if v, ok := m[k].(string); ok && v != "" {
					return v
				}
			}
		}
		return nil
	}
	title := pick("title")
	if title == nil {
		var in map[string]any
		_ = json.Unmarshal(r.Inputs, &in)
		for _, k := range []string{"title", "topic", "prompt", "summary"} {
			if v, ok := in[k].(string); ok && strings.TrimSpace(v) != "" {
				title = strings.TrimSpace(v)
				break
			}
		}
	}
	sum := fiber.Map{"title": title, "product_url": pick("video_url", "image_url", "audio_url"),
		"thumbnail_url": pick("thumbnail_url", "cover_url", "image_url"), "duration": nil}
	if d, ok := out["duration"].(float64); ok && sum["product_url"] != nil {
		sum["duration"] = d
	}
	return sum
}

// deleteRun deletes a finished run of the caller's with the files it made (404 for anyone else's,
// 409 while it is pending, running or paused).
func (s *Server) deleteRun(c *fiber.Ctx) error {
	rs, r, err := s.loadRun(c)
	if err != nil {
		return err
	}
	if r.UserID != principal(c).UserID {
		return errcode.New(errcode.NotFound, "Run not found") // an admin reads others' runs, deletes only their own
	}
	if s.Content == nil {
		return errcode.New(errcode.Unknown, "The content service is not configured")
	}
	trace, err := rs.Trace(s.ctx(c), r.ID)
	if err != nil {
		return err
	}
	if err := s.Content.DeleteRun(s.ctx(c), r, trace); err != nil {
		return err
	}
	return okTop(c, fiber.StatusOK, fiber.Map{"run_id": r.ID, "deleted": true})
}

func (s *Server) listManifests(c *fiber.Ctx) error {
	rs, err := s.runService()
	if err != nil {
		return err
	}
	return okTop(c, fiber.StatusOK, fiber.Map{"manifests": rs.Manifests().Summaries()})
}

// listVoices lists the voices a run's voice input may name (espeak-ng's on this host), all or
// those of ?language= (en, zh, ...). With an external speech generator (SPEECH_API_URL) the host
// does not know its voices: checked says so, and any voice is passed on.
func (s *Server) listVoices(c *fiber.Ctx) error {
	rs, err := s.runService()
	if err != nil {
		return err
	}
	language := strings.TrimSpace(c.Query("language"))
	if len(language) > 32 {
		return errcode.Invalid("language", "must be at most 32 characters")
	}
	v, checked, err := rs.Voices()
	if !checked {
		return okTop(c, fiber.StatusOK, fiber.Map{"checked": false, "voices": []any{}, "variants": []any{},
			"note": "an external speech generator (SPEECH_API_URL) is configured: its voices are not known here"})
	}
	if err != nil {
		return okTop(c, fiber.StatusOK, fiber.Map{"checked": true, "voices": []any{}, "variants": []any{}, "note": err.Error()})
	}
	return okTop(c, fiber.StatusOK, fiber.Map{"checked": true, "language": language, "voices": v.ForLanguage(language), "variants": v.Variants})
}
