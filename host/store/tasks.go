package store

import (
	"context"
	"encoding/json"
	"time"
)

// Task states (stored lower case; SPEC.md writes them upper case).
const (
	TaskPending   = "pending"
	TaskQueued    = "queued"
	TaskRunning   = "running"
	TaskSuccess   = "success"
	TaskFailed    = "failed"
	TaskCancelled = "cancelled"
)

// Task is a row of the project task table, and the API's answer (its tags: see Project).
type Task struct {
	ID            string          `json:"id" format:"uuid"`
	ProjectID     string          `json:"project_id" format:"uuid"`
	UserID        string          `json:"user_id"`
	Type          string          `json:"type" doc:"e.g. a generation type"`
	Status        string          `json:"status" enum:"pending,queued,running,success,failed,cancelled"`
	InputParams   json.RawMessage `json:"input_params"`
	OutputData    json.RawMessage `json:"output_data"`
	ErrorMessage  string          `json:"error_message"`
	RetryCount    int             `json:"retry_count"`
	MaxRetries    int             `json:"max_retries"`
	RunID         string          `json:"run_id,omitempty" doc:"the run executing it, once dispatched"`
	NextAttemptAt *time.Time      `json:"next_attempt_at,omitempty"`
	CreatedAt     time.Time       `json:"created_at"`
	UpdatedAt     time.Time       `json:"updated_at"`
	CompletedAt   *time.Time      `json:"completed_at"`
}

// Active reports whether the task can still be cancelled (pending, queued or running).
func (t *Task) Active() bool {
	return t.Status == TaskPending || t.Status == TaskQueued || t.Status == TaskRunning
}

// Asset (a row of the unified asset table) is declared in content.go.

// TaskUpdate is one guarded state change of a task: it applies only while the task is in one of
// From, so two hosts cannot move the same task twice (ErrStale otherwise; ErrNotFound for no task).
type TaskUpdate struct {
	ID            string
	From          []string // required
	To            string   // required
	RunID         *string  // set when not nil
	OutputData    json.RawMessage
	ErrorMessage  *string
	IncRetry      bool       // retry_count = retry_count + 1
	NextAttemptAt *time.Time // set (nil: cleared)
	Completed     bool       // completed_at = now
	Assets        []Asset    // written in the same transaction
}

// ClaimTasksParams selects work for a task worker.
type ClaimTasksParams struct {
	From  string // pending or queued
	To    string // queued or running
	Limit int
	// StaleBefore, when set, takes only tasks without a run last updated before it (a host that
	// moved them died before starting their run).
	StaleBefore time.Time
}

// Tasks stores project tasks.
type Tasks interface {
	ListProjectTasks(ctx context.Context, projectID string) ([]Task, error)
	CreateTask(ctx context.Context, t *Task) error
	GetTask(ctx context.Context, id string) (*Task, error)
	// UpdateTask applies a guarded transition and returns the task as stored after it.
	UpdateTask(ctx context.Context, u TaskUpdate) (*Task, error)
	// ClaimTasks moves up to Limit tasks From -> To (without StaleBefore, only tasks whose
	// next_attempt_at is due; with it, only orphans) and returns those this caller moved, oldest
	// first. Each task still qualifies when its row is written, so concurrent callers never take
	// one task twice, nor a task another caller has meanwhile moved on.
	ClaimTasks(ctx context.Context, p ClaimTasksParams) ([]Task, error)
	// ListTaskAssets returns the assets a task produced.
	ListTaskAssets(ctx context.Context, taskID string) ([]Asset, error)
}
