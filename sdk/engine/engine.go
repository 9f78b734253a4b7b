// Package engine is the contract between the Reelforge host and a workflow engine.
//
// An engine executes runs of the workflows whose manifest names it (engine: node | graph |
// automation | chatflow | ...). Engines usually live in their own process and are reached over
// gRPC (hashicorp/go-plugin); authors only implement the plain Go interface Engine and call Serve
// from their main. While it works, an engine calls back into the host through Host: to record
// trace steps and progress, create and await external jobs, search the knowledge base and ask the
// language model.
//
// Start at Engine, RunRequest and RunResult.
package engine

import (
	"context"
	"encoding/json"
	"time"

	"github.com/reelforge/reelforge/sdk/errcode"
)

// Engine is implemented by every workflow engine. Implementations must be safe for concurrent use:
// the host runs many runs at once.
type Engine interface {
	// Info describes the engine (name, version, what it can do).
	Info(ctx context.Context) (*Info, error)
	// Run executes a run (a fresh start, a resume after human input, a retry from a failed step, or
	// a recovery after a host restart) until it completes, fails, pauses, or waits for an external
	// job's callback. Steps already in req.Completed must not be executed again: their outputs are
	// reused. Cancellation arrives as ctx being cancelled (and, for work outside the call, Cancel).
	Run(ctx context.Context, h Host, req *RunRequest) (*RunResult, error)
	// Callback interprets an inbound callback for one of the engine's jobs (the body was already
	// verified by the host) and says what it means for the run.
	Callback(ctx context.Context, h Host, req *CallbackRequest) (*RunResult, error)
	// Cancel stops work the engine started outside a Run call (for example at an external runner).
	Cancel(ctx context.Context, req *CancelRequest) error
	// Health answers nil when the engine can take runs.
	Health(ctx context.Context) error
}

// Info describes an engine.
type Info struct {
	Name         string   `json:"name"`
	Version      string   `json:"version"`
	APIVersion   int      `json:"api_version"`
	Capabilities []string `json:"capabilities,omitempty"`
}

// Run statuses an engine may report in RunResult.Status.
const (
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusPaused    = "paused"  // waiting for human input (Awaiting says what)
	StatusWaiting   = "waiting" // waiting for an external job's callback; the run stays running
	// StatusContinue, from Callback: the external work is done and the rest of the run is the
	// host's to execute: the run is handed to the executor again, and the engine's next Run
	// finishes it from the steps its trace holds as completed (the graph engine renders a short
	// drama after its runner's callback so).
	StatusContinue = "continue"
)

// Step statuses of a TraceStep.
const (
	StepPending   = "pending"
	StepRunning   = "running"
	StepCompleted = "completed"
	StepFailed    = "failed"
	StepSkipped   = "skipped"
)

// Workflow is the part of a manifest an engine needs.
type Workflow struct {
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Version  string          `json:"version"`
	Engine   string          `json:"engine"`
	Settings json.RawMessage `json:"settings,omitempty"` // engine-specific settings from the manifest
	Steps    []Step          `json:"steps,omitempty"`
	Timeout  time.Duration   `json:"timeout,omitempty"`
}

// Step is one node of a workflow's DAG (node engine).
type Step struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Agent     string          `json:"agent"` // script_writer, rewriter, kb_lookup, generator, human_input, ...
	DependsOn []string        `json:"depends_on,omitempty"`
	With      json.RawMessage `json:"with,omitempty"` // agent parameters
	Retries   *int            `json:"retries,omitempty"`
}

// UserContext says who started a run.
type UserContext struct {
	UserID   string `json:"user_id"`
	Username string `json:"username,omitempty"`
	Role     string `json:"role,omitempty"`
}

// ProjectContext says which project a run belongs to.
type ProjectContext struct {
	ProjectID      string `json:"project_id,omitempty"`
	ProjectName    string `json:"project_name,omitempty"`
	StrategyTaskID string `json:"strategy_task_id,omitempty"`
}

// InputMediaDescriptions is the run input the host sets to what the creator said of the run's
// material: a list of {"ref": asset id, "name": file name, "description": text}, one for each
// picture or clip the run shows that has a description, in the order shown (absent when none
// has). An engine writing a script without a model may say them where they fit the topic.
const InputMediaDescriptions = "media_descriptions"

// RunRequest asks an engine to execute a run.
type RunRequest struct {
	RunID       string                     `json:"run_id"`
	Workflow    Workflow                   `json:"workflow"`
	Inputs      map[string]any             `json:"inputs"`
	User        UserContext                `json:"user_context"`
	Project     ProjectContext             `json:"project_context"`
	Completed   map[string]json.RawMessage `json:"completed,omitempty"`    // step id -> outputs of steps already done
	ResumeInput map[string]any             `json:"resume_input,omitempty"` // input given to resume a paused run
	Attempt     int                        `json:"attempt,omitempty"`      // 1 for the first execution
	CallbackURL string                     `json:"callback_url,omitempty"` // base for external callbacks
	Degraded    string                     `json:"degraded,omitempty"`     // why this run is on a fallback engine, if it is
	// Credential is the run's tool credential (host: "rft_..."), for the engine to hand its
	// external tool: sent as `Authorization: Bearer <Credential>` to {CallbackURL}/api/knowledge/context
	// or /api/knowledge/search, it reads the knowledge of the run's owner in the run's project, and
	// nothing else, until the run ends. A secret: never put it in a trace step, outputs or a log.
	// Empty when the host hands none.
	Credential string `json:"-"`
}

// RunResult is what a run came to.
type RunResult struct {
	Status   string         `json:"status"` // StatusCompleted, StatusFailed, StatusPaused, StatusWaiting, StatusContinue
	Outputs  map[string]any `json:"outputs,omitempty"`
	Error    *RunError      `json:"error,omitempty"`
	Awaiting *Awaiting      `json:"awaiting,omitempty"`
	// Duplicate is set by Callback when the callback repeats one already applied.
	Duplicate bool `json:"duplicate,omitempty"`
}

// RunError is the error object of a failed run.
type RunError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	StepID  string `json:"step_id,omitempty"`
	Details any    `json:"details,omitempty"`
}

// Awaiting says what human input a paused run waits for.
type Awaiting struct {
	StepID string `json:"step_id"`
	Prompt string `json:"prompt"`
}

// TraceStep is one step of a run's trace, as SPEC.md defines it.
type TraceStep struct {
	StepID      string         `json:"step_id"`
	StepName    string         `json:"step_name"`
	Agent       string         `json:"agent"`
	Status      string         `json:"status"`
	Inputs      map[string]any `json:"inputs"`
	Outputs     map[string]any `json:"outputs,omitempty"`
	StartedAt   *time.Time     `json:"started_at,omitempty"`
	CompletedAt *time.Time     `json:"completed_at,omitempty"`
	DurationMS  *float64       `json:"duration_ms,omitempty"`
	Confidence  *float64       `json:"confidence,omitempty"`
	TokensUsed  *int64         `json:"tokens_used,omitempty"`
	CostUSD     *float64       `json:"cost_usd,omitempty"`
	Error       *StepError     `json:"error,omitempty"`
	Engine      string         `json:"engine,omitempty"`   // which engine ran the step
	Degraded    string         `json:"degraded,omitempty"` // why it ran on a fallback engine
}

// StepError is the error of a failed step.
type StepError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// CallbackRequest carries a verified inbound callback for one of the engine's jobs.
type CallbackRequest struct {
	RunID   string          `json:"run_id"`
	Job     Job             `json:"job"`
	Kind    string          `json:"kind"` // graph, automation, ai
	Payload json.RawMessage `json:"payload"`
}

// CancelRequest asks an engine to stop a run's outside work.
type CancelRequest struct {
	RunID  string   `json:"run_id"`
	JobIDs []string `json:"job_ids,omitempty"`
}

// Job types of SPEC.md.
const (
	JobAutomation = "automation"
	JobGraph      = "graph"
	JobChatflow   = "chatflow"
	JobMusic      = "music"
	JobVideogen   = "videogen"
	JobSpeech     = "speech"
	JobVideoparse = "videoparse"
)

// JobFailureCode is the catalogue code of a failed job of jobType: MUSIC_API_ERROR for music,
// VIDEO_GEN_ERROR for videogen, EXTERNAL_SERVICE_ERROR for any other.
func JobFailureCode(jobType string) errcode.Code {
	switch jobType {
	case JobMusic:
		return errcode.MusicAPI
	case JobVideogen:
		return errcode.VideoGen
	}
	return errcode.ExternalService
}

// JobWorkflow is the workflow id of a Run through which the host has an engine execute one job
// of a type its registry entry declares (the generators plugin's speech, video, music and link
// jobs): Inputs["job"] is the Job (its JSON), User the run's owner, CallbackURL where an external
// executor calls back. The engine answers completed with the job's result as Outputs, failed
// with the job's error, or waiting when an external executor took the job and will call back.
// Cancelling the call stops the job.
const JobWorkflow = "@job"

// Job statuses (SPEC.md Job): a Job's here and the host's record of it (store.Job.Status).
const (
	JobPending   = "pending"
	JobRunning   = "running"
	JobCompleted = "completed"
	JobFailed    = "failed"
	JobTimeout   = "timeout"
)

// Job is an external asynchronous task linked to a run.
type Job struct {
	JobID      string          `json:"job_id"`
	RunID      string          `json:"run_id"`
	Type       string          `json:"type"`
	Status     string          `json:"status"`
	Request    json.RawMessage `json:"request,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      *RunError       `json:"error,omitempty"`
	RetryCount int             `json:"retry_count"`
	MaxRetries int             `json:"max_retries"`
	CreatedAt  time.Time       `json:"created_at"`
	TimeoutAt  time.Time       `json:"timeout_at"`
	ResolvedAt *time.Time      `json:"resolved_at,omitempty"`
}

// JobRequest asks the host to create (and, with Dispatch, submit) a job.
type JobRequest struct {
	RunID    string          `json:"run_id"`
	StepID   string          `json:"step_id,omitempty"`
	Type     string          `json:"type"`
	Request  json.RawMessage `json:"request"`
	Dispatch bool            `json:"dispatch"` // the host submits it to the configured executor
}

// SearchRequest asks the host's knowledge base.
type SearchRequest struct {
	UserID    string `json:"user_id"`
	ProjectID string `json:"project_id,omitempty"`
	Query     string `json:"query"`
	TopK      int    `json:"top_k"`
	// Ground asks for the hits that ground an answer to Query only, best first, by the host's
	// rule of /api/knowledge/ask (enough of the question's known terms, and the number a "how
	// much" or "how long" asks for): none when the knowledge base has no citable basis.
	Ground bool `json:"ground,omitempty"`
}

// SearchHit is one knowledge-base hit.
type SearchHit struct {
	ChunkID    string  `json:"chunk_id"`
	ChunkText  string  `json:"chunk_text"`
	Heading    string  `json:"heading"`
	SourceName string  `json:"source_name"`
	Document   string  `json:"document"`
	Score      float64 `json:"score"`
}

// GenerateRequest asks the host's language model for text.
type GenerateRequest struct {
	System    string `json:"system,omitempty"`
	Prompt    string `json:"prompt"`
	MaxTokens int    `json:"max_tokens,omitempty"`
}

// GenerateResult is the model's answer. OK is false when no model is configured, in which case
// engines fall back to their templates.
type GenerateResult struct {
	Text       string  `json:"text"`
	OK         bool    `json:"ok"`
	TokensUsed int64   `json:"tokens_used,omitempty"`
	CostUSD    float64 `json:"cost_usd,omitempty"`
	Model      string  `json:"model,omitempty"`
}

// Host is the host's side, called by engines while they work. Calls are safe for concurrent use.
type Host interface {
	// ReportStep records (creates or updates, keyed by StepID) a trace step of the run.
	ReportStep(ctx context.Context, runID string, step TraceStep) error
	// ReportProgress sets the run's progress (0 to 100) and current step.
	ReportProgress(ctx context.Context, runID string, progress float64, currentStep string) error
	// CreateJob stores a job for the run (and submits it when Dispatch is set).
	CreateJob(ctx context.Context, req *JobRequest) (*Job, error)
	// WaitJob blocks until the job is resolved (completed, failed or timed out) or ctx ends.
	WaitJob(ctx context.Context, jobID string) (*Job, error)
	// Search asks the knowledge base, with the visibility of req.UserID.
	Search(ctx context.Context, req *SearchRequest) ([]SearchHit, error)
	// Generate asks the configured language model; OK is false when none is configured.
	Generate(ctx context.Context, req *GenerateRequest) (*GenerateResult, error)
}
