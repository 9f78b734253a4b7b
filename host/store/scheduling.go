package store

import (
	"context"
	"encoding/json"
	"time"
)

// Auto-run marks of strategy tasks (SPEC.md, Scheduled strategy task).
const (
	AutoRunRunning   = "running"
	AutoRunCompleted = "completed"
	AutoRunFailed    = "failed"
)

// Strategy task priorities, in scheduling order.
const (
	PriorityHigh   = "high"
	PriorityMedium = "medium"
	PriorityLow    = "low"
)

// StrategyTask is one dated task of a project's blueprint.
type StrategyTask struct {
	TaskID      string          `json:"strategy_task_id"` // the blueprint's id, unique within the project
	ProjectID   string          `json:"project_id"`
	ProjectName string          `json:"project_name"` // filled by ListDueStrategyTasks
	UserID      string          `json:"user_id"`      // the project's owner; filled by ListDueStrategyTasks
	WorkflowID  string          `json:"workflow_id"`
	Summary     string          `json:"summary"`
	Platform    string          `json:"platform"`
	Inputs      json.RawMessage `json:"inputs"`
	DueDate     string          `json:"due_date"` // YYYY-MM-DD
	Priority    string          `json:"priority"`
	RunningRuns int             `json:"-"` // running auto_runs of the project; filled by ListDueStrategyTasks
	CreatedAt   time.Time       `json:"created_at"`
}

// DueStrategyTasksParams selects due strategy tasks: due on or before Today, in an active project
// that is not deleted, without a running or completed auto_run; ordered by priority (high, medium,
// low), due date, project, task id.
type DueStrategyTasksParams struct {
	Today      string   // YYYY-MM-DD
	UserID     string   // empty: every user's projects
	ProjectIDs []string // empty: every project
	Limit      int
}

// AutoRun is the auto_runs mark of one strategy task of a project.
type AutoRun struct {
	ProjectID      string          `json:"project_id"`
	StrategyTaskID string          `json:"strategy_task_id"`
	RunID          string          `json:"run_id"`
	WorkflowID     string          `json:"workflow_id"`
	Status         string          `json:"status"`
	Trace          json.RawMessage `json:"trace"`
	StartedAt      time.Time       `json:"started_at"`
	CompletedAt    *time.Time      `json:"completed_at"`
}

// AutoRunRunParams name the running mark of strategy task StrategyTaskID of ProjectID and the run
// SetAutoRunRun records on it.
type AutoRunRunParams struct {
	ProjectID      string
	StrategyTaskID string
	RunID          string
}

// FinishAutoRunParams ends a running mark: it applies only while the mark is running and names
// RunID or no run yet.
type FinishAutoRunParams struct {
	ProjectID      string
	StrategyTaskID string
	RunID          string
	Status         string // completed or failed
	Trace          json.RawMessage
}

// LeaderLock is a lock TryLeaderLock granted.
type LeaderLock interface {
	// Check returns an error when the lock may have been lost (its connection broke).
	Check(ctx context.Context) error
	// Release gives the lock up; it is safe to call more than once.
	Release()
}

// Scheduling stores strategy tasks and the auto_runs marks of projects.
type Scheduling interface {
	// ReplaceStrategyTasks makes tasks the strategy tasks of the project (earlier ones are
	// removed); concurrent replaces of one project take turns, so one of them is what is left.
	// A missing project is ErrNotFound.
	ReplaceStrategyTasks(ctx context.Context, projectID string, tasks []StrategyTask) error
	ListStrategyTasks(ctx context.Context, projectID string) ([]StrategyTask, error)
	ListDueStrategyTasks(ctx context.Context, p DueStrategyTasksParams) ([]StrategyTask, error)
	// StartAutoRun marks the strategy task running (run id still empty). Only a new or failed
	// mark is started: one already running or completed is ErrConflict, so a doubled trigger, or
	// one acting on a stale due list, does not run the task again.
	StartAutoRun(ctx context.Context, a *AutoRun) error
	// SetAutoRunRun records the run of a mark that has none yet.
	SetAutoRunRun(ctx context.Context, p AutoRunRunParams) error
	// FinishAutoRun ends a running mark (ErrStale when it is not running for that run).
	FinishAutoRun(ctx context.Context, p FinishAutoRunParams) error
	GetAutoRun(ctx context.Context, projectID, strategyTaskID string) (*AutoRun, error)
	// SetSchedulerMark and SchedulerMark keep named instants shared by hosts.
	SetSchedulerMark(ctx context.Context, name string, at time.Time) error
	SchedulerMark(ctx context.Context, name string) (time.Time, error)
	// TryLeaderLock takes the named leader lock without waiting: on PostgreSQL an advisory lock
	// held on a dedicated connection, on SQLite always granted (one host per file). ok is false
	// when another holder has it.
	TryLeaderLock(ctx context.Context, name string) (lock LeaderLock, ok bool, err error)
}
