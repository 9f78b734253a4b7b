// Package launch is the seam through which the scheduler and the project-task worker start
// workflow runs and learn how they ended. host/runs does the work; host/app adapts its Service to
// Runner (host/app/launch.go copies Params into runs.StartParams field by field) and forwards every
// finished run to the consumers' RunEnded methods.
package launch

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/reelforge/reelforge/host/auth"
)

// taskPrefix marks the runs of project tasks: their TriggeredBy is "task:<task id>".
const taskPrefix = "task:"

// TriggeredByTask is the TriggeredBy of the run of task id.
func TriggeredByTask(id string) string { return taskPrefix + id }

// TaskOf returns the task id of a run's TriggeredBy, or "" for a run of no task.
func TaskOf(triggeredBy string) string {
	id, _ := strings.CutPrefix(triggeredBy, taskPrefix)
	if id == triggeredBy {
		return ""
	}
	return id
}

// Params start one run.
type Params struct {
	Workflow       string
	Inputs         map[string]any
	User           *auth.Principal
	ProjectID      string
	StrategyTaskID string
	Trigger        string
	TriggeredBy    string
}

// Runner starts and cancels workflow runs. Start stores the run and returns its id before the run
// executes; errors are *errcode.Error (404 WORKFLOW_NOT_FOUND, 403 project, ...).
type Runner interface {
	// Check answers whether Start would accept a run of workflow with inputs (404
	// WORKFLOW_NOT_FOUND, 400 VALIDATION_ERROR naming the field), without starting one.
	Check(ctx context.Context, workflow string, inputs map[string]any) error
	Start(ctx context.Context, p Params) (runID string, err error)
	Cancel(ctx context.Context, runID string) error
}

// Ended is a run that reached completed, failed or cancelled.
type Ended struct {
	RunID          string
	WorkflowID     string
	ProjectID      string
	Status         string // completed, failed, cancelled
	TriggeredBy    string
	Outputs        json.RawMessage
	Error          json.RawMessage // {code, message, ...} of a failed run
	Trace          json.RawMessage // the run's trace steps, when the adapter has them
	ProjectContext json.RawMessage // {project_id, strategy_task_id, ...}
}

// ErrorCode returns the code of a failed run's error ("" when there is none).
func (e *Ended) ErrorCode() string {
	var v struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(e.Error, &v) // absent or malformed: no code
	return v.Code
}

// ErrorMessage returns the message of a failed run's error.
func (e *Ended) ErrorMessage() string {
	var v struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(e.Error, &v) // absent or malformed: no message
	if v.Message == "" && len(e.Error) > 0 && e.Error[0] == '"' {
		_ = json.Unmarshal(e.Error, &v.Message) // a bare string
	}
	return v.Message
}

// StrategyTaskID returns project_context.strategy_task_id.
func (e *Ended) StrategyTaskID() string {
	var v struct {
		ID string `json:"strategy_task_id"`
	}
	_ = json.Unmarshal(e.ProjectContext, &v) // absent: none
	return v.ID
}
