package api

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/reelforge/reelforge/host/manifest"
	"github.com/reelforge/reelforge/host/runs"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/internal/render"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// workflowOperations declares the Workflow family's run routes (typed: operations.go). Their
// answers are Top: success and their fields at the top level (DECISIONS.md).
func (s *Server) workflowOperations(api huma.API) {
	const tag = "Workflow"
	register(api, op{Method: "POST", Path: "/api/workflow/start", Tag: tag, Summary: "Start a run",
		Errors: []int{403, 404, 409}}, s.startRun)
	register(api, op{Method: "GET", Path: "/api/workflow/status/{runId}", Tag: tag, Summary: "Status of a run",
		Errors: []int{404}}, s.runStatus)
	register(api, op{Method: "GET", Path: "/api/workflow/result/{runId}", Tag: tag, Summary: "Result of a run",
		Errors: []int{404}}, s.runResult)
	register(api, op{Method: "GET", Path: "/api/workflow/trace/{runId}", Tag: tag, Summary: "Trace of a run",
		Errors: []int{404}}, s.runTrace)
	register(api, op{Method: "POST", Path: "/api/workflow/cancel/{runId}", Tag: tag, Summary: "Cancel a run (pending, running or paused)",
		Errors: []int{404, 409}}, s.cancelRun)
	register(api, op{Method: "POST", Path: "/api/workflow/resume/{runId}", Tag: tag, Summary: "Resume a paused run with input",
		Errors: []int{404, 409}}, s.resumeRun)
	register(api, op{Method: "POST", Path: "/api/workflow/retry/{runId}", Tag: tag, Summary: "Retry a failed run",
		Errors: []int{404, 409}}, s.retryRun)
	register(api, op{Method: "GET", Path: "/api/workflow/runs", Tag: tag, Summary: "The caller's runs, newest first"}, s.listRuns)
	register(api, op{Method: "DELETE", Path: "/api/workflow/runs/{runId}", Tag: tag,
		Summary: "Delete a finished run of the caller's with the files it made", Errors: []int{404, 409},
		Desc: "Owner only (anyone else gets 404). Refused with 409 while the run is pending, running or paused. " +
			"The bytes of every file the run made (local folder and bucket) go first, then its rows (run, trace, jobs, assets); " +
			"the URLs that named them answer 404 after. Sent again after a failure, it finishes."}, s.deleteRun)
	register(api, op{Method: "GET", Path: "/api/workflow/manifests", Tag: tag, Summary: "The workflows that can be started"}, s.listManifests)
	register(api, op{Method: "GET", Path: "/api/workflow/voices", Tag: tag,
		Summary: "The voices a run's voice input may name (the speech generator's), all or of one language"}, s.listVoices)
	register(api, op{Method: "GET", Path: "/api/workflow/metrics", Tag: tag,
		Summary: "Run, job, agent and callback figures against the SPEC.md targets", Desc: workflowMetricsDesc}, s.workflowMetrics)
	register(api, op{Method: "POST", Path: "/api/orchestrator/run", Tag: tag, Summary: "Start a run from the automation timer",
		Errors: []int{403, 404, 409}}, s.orchestratorRun)
}

func (s *Server) runService() (*runs.Service, error) {
	if s.Runs == nil {
		return nil, errcode.New(errcode.ResourceExhausted, "Workflow runs are not available")
	}
	return s.Runs, nil
}

// runTrigger is what started a run: one of store.Triggers, the one list the document's enum is
// built from.
type runTrigger string

func (runTrigger) Schema(huma.Registry) *huma.Schema {
	enum := make([]any, len(store.Triggers))
	for i, t := range store.Triggers {
		enum[i] = t
	}
	return &huma.Schema{Type: huma.TypeString, Enum: enum}
}

// stored is a JSON document the host wrote from a T (a run's error, a trace step, its warnings)
// and answers as it was stored: its bytes pass through, and the document describes it as T.
type stored[T any] json.RawMessage

func (d stored[T]) MarshalJSON() ([]byte, error) {
	if len(d) == 0 {
		return []byte("null"), nil
	}
	return d, nil
}

func (stored[T]) Schema(r huma.Registry) *huma.Schema {
	return r.Schema(reflect.TypeFor[T](), true, "")
}

// storedOrNull is doc, or null when it is empty: for a field a run's answer names whether or
// not the run has it.
func storedOrNull[T any](doc json.RawMessage) stored[T] {
	if len(doc) == 0 {
		return stored[T]("null")
	}
	return stored[T](doc)
}

func storedList[T any](docs []json.RawMessage) []stored[T] {
	if docs == nil {
		return nil
	}
	out := make([]stored[T], len(docs))
	for i, d := range docs {
		out[i] = stored[T](d)
	}
	return out
}

// StartBody is the body of the routes that start a run (exported: the orchestrator's body embeds
// it, and huma reads the fields of exported embedded structs only). Both take the workflow as "workflow" or
// "workflow_id"; the route's own field (the one errors name) wins when both are set.
type StartBody struct {
	Workflow       string         `json:"workflow,omitempty" maxLength:"100" doc:"manifest id (required on /api/workflow/start, here or as workflow_id)"`
	WorkflowID     string         `json:"workflow_id,omitempty" maxLength:"100" doc:"alias of workflow (required on /api/orchestrator/run, here or as workflow)"`
	ProjectID      string         `json:"project_id,omitempty" doc:"a project of the caller's (403 otherwise)"`
	StrategyTaskID string         `json:"strategy_task_id,omitempty"`
	Inputs         map[string]any `json:"inputs,omitempty" doc:"the workflow's inputs"`
}

// workflow is the workflow the body names, field being the route's own name for it; "" is
// refused naming field (one of two names: a schema says it only with anyOf, which huma does not
// check for us).
func (b *StartBody) workflow(field string) (string, error) {
	wf, other := b.Workflow, b.WorkflowID
	if field == "workflow_id" {
		wf, other = other, wf
	}
	if wf = firstSet(wf, other); wf == "" {
		return "", errcode.Invalid(field, "is required")
	}
	return wf, nil
}

type startInput struct {
	Body *StartBody // optional: without one, the workflow is missing (400)
}

// StartedRun is the answer of a route that starts a run (exported, embedded as StartBody is).
type StartedRun struct {
	RunID    string `json:"run_id" format:"uuid"`
	Workflow string `json:"workflow" doc:"manifest id"`
	Status   string `json:"status" enum:"pending"`
	Message  string `json:"message"`
}

func startedAnswer(r *store.Run) (*Top[StartedRun], error) {
	return answerTop(StartedRun{RunID: r.ID, Workflow: r.WorkflowID, Status: r.Status, Message: "Workflow started"})
}

func (s *Server) startRun(ctx context.Context, in *startInput) (*Top[StartedRun], error) {
	rs, err := s.runService()
	if err != nil {
		return nil, err
	}
	b := in.Body
	if b == nil {
		b = &StartBody{}
	}
	wf, err := b.workflow("workflow")
	if err != nil {
		return nil, err
	}
	r, err := rs.Start(ctx, runs.StartParams{Workflow: wf, Inputs: b.Inputs, User: caller(ctx),
		ProjectID: b.ProjectID, StrategyTaskID: b.StrategyTaskID, Trigger: store.TriggerAPI})
	if err != nil {
		return nil, err
	}
	return startedAnswer(r)
}

type orchestratorInput struct {
	Body *struct { // optional: without one, the workflow is missing (400)
		StartBody
		Trigger runTrigger `json:"trigger,omitempty" doc:"default scheduler"`
	}
}

type orchestratedRun struct {
	StartedRun
	WorkflowID string     `json:"workflow_id" doc:"manifest id"`
	Trigger    runTrigger `json:"trigger"`
}

// orchestratorRun is the automation timer's route: POST /api/orchestrator/run {workflow_id, inputs, trigger}.
func (s *Server) orchestratorRun(ctx context.Context, in *orchestratorInput) (*Top[orchestratedRun], error) {
	rs, err := s.runService()
	if err != nil {
		return nil, err
	}
	if in.Body == nil {
		return nil, errcode.Invalid("workflow_id", "is required")
	}
	b := in.Body
	wf, err := b.workflow("workflow_id")
	if err != nil {
		return nil, err
	}
	trigger := string(b.Trigger)
	if trigger == "" {
		trigger = store.TriggerScheduler
	}
	r, err := rs.Start(ctx, runs.StartParams{Workflow: wf, Inputs: b.Inputs, User: caller(ctx),
		ProjectID: b.ProjectID, StrategyTaskID: b.StrategyTaskID, Trigger: trigger, TriggeredBy: "orchestrator"})
	if err != nil {
		return nil, err
	}
	return answerTop(orchestratedRun{StartedRun: StartedRun{RunID: r.ID, Workflow: r.WorkflowID, Status: r.Status,
		Message: "Workflow started"}, WorkflowID: r.WorkflowID, Trigger: runTrigger(r.Trigger)})
}

type runPath struct {
	RunID string `path:"runId"`
}

func (s *Server) loadRun(ctx context.Context, id string) (*runs.Service, *store.Run, error) {
	rs, err := s.runService()
	if err != nil {
		return nil, nil, err
	}
	r, err := rs.Get(ctx, caller(ctx), id)
	return rs, r, err
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

// RunView is the status shape of a run (exported: the status and listing answers embed it, and
// huma reads the fields of exported embedded structs only).
type RunView struct {
	RunID          string                  `json:"run_id" format:"uuid"`
	Workflow       string                  `json:"workflow" doc:"manifest id"`
	Status         string                  `json:"status" enum:"pending,running,completed,failed,cancelled,paused"`
	Progress       float64                 `json:"progress" minimum:"0" maximum:"100"`
	CurrentStep    string                  `json:"current_step" doc:"the step the run is at; a failed run's, the step its error names"`
	CreatedAt      time.Time               `json:"created_at"`
	UpdatedAt      time.Time               `json:"updated_at"`
	Trigger        runTrigger              `json:"trigger"`
	Engine         string                  `json:"engine" doc:"the engine that ran (or runs) it"`
	Attempt        int                     `json:"attempt"`
	ProjectID      string                  `json:"project_id,omitempty"`
	TriggeredBy    string                  `json:"triggered_by,omitempty" doc:"orchestrator, batch, task:<id>, ..."`
	Inputs         jsonObject              `json:"inputs,omitempty"`
	UserContext    jsonObject              `json:"user_context,omitempty"`
	ProjectContext jsonObject              `json:"project_context,omitempty"`
	Degraded       string                  `json:"degraded,omitempty" doc:"why the run went to the fallback engine"`
	StartedAt      *time.Time              `json:"started_at,omitempty"`
	CompletedAt    *time.Time              `json:"completed_at,omitempty"`
	Awaiting       stored[engine.Awaiting] `json:"awaiting,omitempty" doc:"a paused run's: what it waits for"`
	Error          stored[engine.RunError] `json:"error,omitempty" doc:"a failed or cancelled run's"`
	Warnings       stored[[]runs.Warning]  `json:"warnings,omitempty" doc:"a completed run's: what it skipped or ignored"`
}

func runView(r *store.Run) RunView {
	v := RunView{RunID: r.ID, Workflow: r.WorkflowID, Status: r.Status, Progress: r.Progress,
		CurrentStep: failedStep(r), CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		Trigger: runTrigger(r.Trigger), Engine: r.Engine, Attempt: r.Attempt,
		ProjectID: r.ProjectID, TriggeredBy: r.TriggeredBy, Inputs: jsonObject(r.Inputs),
		UserContext: jsonObject(r.UserContext), ProjectContext: jsonObject(r.ProjectContext),
		Degraded: r.Degraded, StartedAt: r.StartedAt, CompletedAt: r.CompletedAt,
		Warnings: stored[[]runs.Warning](runs.WarningsOf(r))}
	if r.Status == store.RunPaused {
		v.Awaiting = stored[engine.Awaiting](r.Awaiting)
	}
	if r.Status == store.RunFailed || r.Status == store.RunCancelled {
		v.Error = stored[engine.RunError](r.Error)
	}
	return v
}

type runStatusAnswer struct {
	RunView
	Jobs []runs.JobRef `json:"jobs" doc:"the run's jobs, oldest first"`
}

func (s *Server) runStatus(ctx context.Context, in *runPath) (*Top[runStatusAnswer], error) {
	rs, r, err := s.loadRun(ctx, in.RunID)
	if err != nil {
		return nil, err
	}
	jobs, err := rs.Jobs(ctx, r.ID)
	if err != nil {
		return nil, err
	}
	return answerTop(runStatusAnswer{RunView: runView(r), Jobs: jobs})
}

type runResultAnswer struct {
	RunID       string                      `json:"run_id" format:"uuid"`
	Workflow    string                      `json:"workflow"`
	Status      string                      `json:"status" enum:"pending,running,completed,failed,cancelled,paused"`
	Progress    float64                     `json:"progress"`
	Message     string                      `json:"message,omitempty" doc:"while not finished"`
	Outputs     jsonObject                  `json:"outputs,omitempty" doc:"once completed"`
	Trace       *[]stored[engine.TraceStep] `json:"trace,omitempty" doc:"once finished"`
	Error       stored[engine.RunError]     `json:"error,omitempty" doc:"once failed or cancelled"`
	Warnings    stored[[]runs.Warning]      `json:"warnings,omitempty"`
	Awaiting    stored[engine.Awaiting]     `json:"awaiting,omitempty" doc:"while paused"`
	CompletedAt *time.Time                  `json:"completed_at,omitempty"`
}

func (s *Server) runResult(ctx context.Context, in *runPath) (*Top[runResultAnswer], error) {
	rs, r, err := s.loadRun(ctx, in.RunID)
	if err != nil {
		return nil, err
	}
	out := runResultAnswer{RunID: r.ID, Workflow: r.WorkflowID, Status: r.Status, Progress: r.Progress}
	switch r.Status {
	case store.RunCompleted, store.RunFailed, store.RunCancelled:
		trace, err := rs.Trace(ctx, r.ID)
		if err != nil {
			return nil, err
		}
		live, err := s.liveOutputs(ctx, r.UserID, append([]json.RawMessage{r.Outputs}, trace...))
		if err != nil {
			return nil, err
		}
		steps := storedList[engine.TraceStep](live[1:])
		out.Trace = &steps
		if r.Status == store.RunCompleted {
			out.Outputs = jsonObject(live[0])
			if len(out.Outputs) == 0 {
				out.Outputs = jsonObject("{}")
			}
			r.Outputs = live[0]
			out.Warnings = stored[[]runs.Warning](runs.WarningsOf(r))
		} else {
			out.Error = storedOrNull[engine.RunError](r.Error)
		}
		out.CompletedAt = r.CompletedAt
	case store.RunPaused:
		out.Message = "Run is paused, waiting for input"
		out.Awaiting = storedOrNull[engine.Awaiting](r.Awaiting)
	default:
		out.Message = "Run is " + r.Status + ", result not ready yet"
	}
	return answerTop(out)
}

type runTraceAnswer struct {
	RunID  string                     `json:"run_id" format:"uuid"`
	Status string                     `json:"status"`
	Trace  []stored[engine.TraceStep] `json:"trace"`
}

func (s *Server) runTrace(ctx context.Context, in *runPath) (*Top[runTraceAnswer], error) {
	rs, r, err := s.loadRun(ctx, in.RunID)
	if err != nil {
		return nil, err
	}
	trace, err := rs.Trace(ctx, r.ID)
	if err != nil {
		return nil, err
	}
	if trace, err = s.liveOutputs(ctx, r.UserID, trace); err != nil {
		return nil, err
	}
	return answerTop(runTraceAnswer{RunID: r.ID, Status: r.Status, Trace: storedList[engine.TraceStep](trace)})
}

// changedRun is the answer of a route that changes a run's state.
type changedRun struct {
	RunID   string `json:"run_id" format:"uuid"`
	Status  string `json:"status" enum:"pending,running,completed,failed,cancelled,paused"`
	Attempt int    `json:"attempt,omitempty" doc:"retry: the attempt now running"`
	Message string `json:"message"`
}

func (s *Server) cancelRun(ctx context.Context, in *runPath) (*Top[changedRun], error) {
	rs, err := s.runService()
	if err != nil {
		return nil, err
	}
	r, err := rs.Cancel(ctx, caller(ctx), in.RunID)
	if err != nil {
		return nil, err
	}
	return answerTop(changedRun{RunID: r.ID, Status: r.Status, Message: "Run cancelled"})
}

type resumeInput struct {
	RunID string `path:"runId"`
	Body  *struct {
		Input map[string]any `json:"input,omitempty" doc:"merged into the run"`
	}
}

func (s *Server) resumeRun(ctx context.Context, in *resumeInput) (*Top[changedRun], error) {
	rs, err := s.runService()
	if err != nil {
		return nil, err
	}
	var input map[string]any
	if in.Body != nil {
		input = in.Body.Input
	}
	r, err := rs.Resume(ctx, caller(ctx), in.RunID, input)
	if err != nil {
		return nil, err
	}
	return answerTop(changedRun{RunID: r.ID, Status: r.Status, Message: "Run resumed"})
}

func (s *Server) retryRun(ctx context.Context, in *runPath) (*Top[changedRun], error) {
	rs, err := s.runService()
	if err != nil {
		return nil, err
	}
	r, err := rs.Retry(ctx, caller(ctx), in.RunID)
	if err != nil {
		return nil, err
	}
	return answerTop(changedRun{RunID: r.ID, Status: r.Status, Attempt: r.Attempt, Message: "Run retried from its failed step"})
}

type listRunsInput struct {
	Paging
	Status   string `query:"status" enum:"pending,running,completed,failed,cancelled,paused"`
	Workflow string `query:"workflow" maxLength:"100" doc:"manifest id"`
}

// RunListItem is what a library shows of a run: its status and its summary. The summary's fields
// it lacks are null.
type RunListItem struct {
	RunView
	Title        *string  `json:"title" doc:"the outputs' title, else the inputs' title, topic, prompt or summary"`
	ProductURL   *string  `json:"product_url" doc:"the URL of what the run made: its video, else its picture, else its narration"`
	ThumbnailURL *string  `json:"thumbnail_url" doc:"the product's cover"`
	Duration     *float64 `json:"duration" doc:"the product's length in seconds"`
}

func (s *Server) listRuns(ctx context.Context, in *listRunsInput) (*List[RunListItem], error) {
	rs, err := s.runService()
	if err != nil {
		return nil, err
	}
	user := caller(ctx).UserID
	list, total, err := rs.List(ctx, store.ListRunsParams{UserID: user, Status: in.Status,
		WorkflowID: in.Workflow, Limit: in.Limit, Offset: in.offset()})
	if err != nil {
		return nil, err
	}
	// The page's runs are all the caller's: their deleted files are found in one query.
	outputs := make([]json.RawMessage, len(list))
	for i := range list {
		outputs[i] = list[i].Outputs
	}
	live, err := s.liveOutputs(ctx, user, outputs)
	if err != nil {
		return nil, err
	}
	items := make([]RunListItem, len(list))
	for i := range list {
		r := &list[i]
		r.Outputs = live[i]
		items[i] = runSummary(r)
	}
	return answerList(items, total, in.Paging)
}

// liveOutputs is docs of runs of userID without the files of theirs that were deleted since (null
// in their place): a run's answer never names a dead URL. Without the content service, docs as
// they are.
func (s *Server) liveOutputs(ctx context.Context, userID string, docs []json.RawMessage) ([]json.RawMessage, error) {
	if s.Content == nil {
		return docs, nil
	}
	return s.Content.LiveOutputs(ctx, userID, docs...)
}

// runSummary is a run as a library lists it: its title, its product's URL (the video, else the
// picture, else the narration), the product's cover and length.
func runSummary(r *store.Run) RunListItem {
	var out map[string]any
	_ = json.Unmarshal(r.Outputs, &out) // no outputs (yet): an empty summary
	assets, _ := out["assets"].(map[string]any)
	pick := func(keys ...string) *string {
		for _, k := range keys {
			for _, m := range []map[string]any{assets, out} {
				if v, ok := m[k].(string); ok && v != "" {
					return &v
				}
			}
		}
		return nil
	}
	item := RunListItem{RunView: runView(r), Title: pick("title"), ProductURL: pick("video_url", "image_url", "audio_url"),
		ThumbnailURL: pick("thumbnail_url", "cover_url", "image_url")}
	if item.Title == nil {
		var in map[string]any
		_ = json.Unmarshal(r.Inputs, &in)
		for _, k := range []string{"title", "topic", "prompt", "summary"} {
			if v, ok := in[k].(string); ok && strings.TrimSpace(v) != "" {
				title := strings.TrimSpace(v)
				item.Title = &title
				break
			}
		}
	}
	if d, ok := out["duration"].(float64); ok && item.ProductURL != nil {
		item.Duration = &d
	}
	return item
}

type deletedRun struct {
	RunID   string `json:"run_id" format:"uuid"`
	Deleted bool   `json:"deleted"`
}

// deleteRun deletes a finished run of the caller's with the files it made (404 for anyone else's,
// 409 while it is pending, running or paused).
func (s *Server) deleteRun(ctx context.Context, in *runPath) (*Top[deletedRun], error) {
	rs, r, err := s.loadRun(ctx, in.RunID)
	if err != nil {
		return nil, err
	}
	if r.UserID != caller(ctx).UserID {
		return nil, errcode.New(errcode.NotFound, "Run not found") // an admin reads others' runs, deletes only their own
	}
	if s.Content == nil {
		return nil, errcode.New(errcode.Unknown, "The content service is not configured")
	}
	trace, err := rs.Trace(ctx, r.ID)
	if err != nil {
		return nil, err
	}
	if err := s.Content.DeleteRun(ctx, r, trace); err != nil {
		return nil, err
	}
	return answerTop(deletedRun{RunID: r.ID, Deleted: true})
}

type manifestsAnswer struct {
	Manifests []manifest.Summary `json:"manifests"`
}

func (s *Server) listManifests(ctx context.Context, _ *struct{}) (*Top[manifestsAnswer], error) {
	rs, err := s.runService()
	if err != nil {
		return nil, err
	}
	return answerTop(manifestsAnswer{rs.Manifests().Summaries()})
}

type voicesInput struct {
	Language string `query:"language" maxLength:"32" doc:"a language code such as en or zh: its voices only"`
}

type voicesAnswer struct {
	Checked  bool           `json:"checked" doc:"false: an external speech generator, whose voices are not known here"`
	Language *string        `json:"language,omitempty" doc:"the language asked for, once the voices are known"`
	Voices   []render.Voice `json:"voices" doc:"id is what a run's voice input takes"`
	Variants []render.Voice `json:"variants" doc:"voice+<id> takes this quality"`
	Note     string         `json:"note,omitempty"`
}

// listVoices lists the voices a run's voice input may name (espeak-ng's on this host), all or
// those of ?language= (en, zh, ...). With an external speech generator (SPEECH_API_URL) the host
// does not know its voices: checked says so, and any voice is passed on.
func (s *Server) listVoices(ctx context.Context, in *voicesInput) (*Top[voicesAnswer], error) {
	rs, err := s.runService()
	if err != nil {
		return nil, err
	}
	language := strings.TrimSpace(in.Language)
	v, checked, err := rs.Voices()
	if !checked {
		return answerTop(voicesAnswer{Voices: []render.Voice{}, Variants: []render.Voice{},
			Note: "an external speech generator (SPEECH_API_URL) is configured: its voices are not known here"})
	}
	if err != nil {
		return answerTop(voicesAnswer{Checked: true, Voices: []render.Voice{}, Variants: []render.Voice{}, Note: err.Error()})
	}
	return answerTop(voicesAnswer{Checked: true, Language: &language, Voices: v.ForLanguage(language), Variants: v.Variants})
}
