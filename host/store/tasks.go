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

// Task is a row of the project task table.
type Task struct {
	ID           string          `json:"id"`
	ProjectID    string          `json:"project_id"`
	UserID       string          `json:"user_id"`
	Type         string          `json:"type"`
	Status       string          `json:"status"`
	InputParams  json.RawMessage `json:"input_params"`
	OutputData   json.RawMessage `json:"output_data"`
	ErrorMessage string          `json:"error_message"`
	RetryCount   int             `json:"retry_count"`
	RunID        string          `json:"run_id,omitempty"`
	CreatedAt    time.Time       `json:"created_at"`
	UpdatedAt    time.Time       `json:"updated_at"`
	CompletedAt  *time.Time      `json:"completed_at"`
}

// Tasks stores project tasks.
type Tasks interface {
	ListProjectTasks(ctx context.Context, projectID string) ([]Task, error)
}
