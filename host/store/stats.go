package store

import (
	"context"
	"time"
)

// StateCount is the number of records of one kind (a job type, say) in one state.
type StateCount struct {
	Kind  string // e.g. the job type; "" for records without one
	State string
	N     int
}

// OpsCounts are the record counts an operator watches (Prometheus gauges): runs by status, jobs by
// type and status, outbox events by status.
type OpsCounts struct {
	Runs   []StateCount // Kind is the engine
	Jobs   []StateCount // Kind is the job type
	Outbox []StateCount // Kind is "" (pending after a failed attempt counts as State "failed")
}

// PoolStats is a snapshot of a driver's connection pool.
type PoolStats struct {
	MaxOpen      int           // the pool's limit
	Open         int           // connections open (in use plus idle)
	InUse        int           // connections handed out
	Idle         int           // connections waiting
	WaitCount    int64         // acquisitions that had to wait, since start
	WaitDuration time.Duration // total time spent waiting, since start
}

// Stats is what both drivers offer for monitoring. It is optional (not part of Driver): consumers
// probe for it by type assertion.
type Stats interface {
	// CountOps counts runs, jobs and outbox events by state, in one short read each.
	CountOps(ctx context.Context) (*OpsCounts, error)
	// RecentQueryLatencies returns the latency_ms of the n most recent knowledge queries of mode
	// ("search" or "ask"), newest first.
	RecentQueryLatencies(ctx context.Context, mode string, n int) ([]float64, error)
	// PoolStats reports the connection pool; it does not touch the database.
	PoolStats() PoolStats
}

// WorkflowSampleParams select the runs (and their jobs and trace steps) created in [Since, Until).
type WorkflowSampleParams struct {
	Since, Until time.Time
	UserID       string // "" for every user's runs
	Limit        int    // most runs read; 0 means 100,000
}

// RunSample is what the workflow metrics need of one run.
type RunSample struct {
	WorkflowID, Engine, Degraded, Status string
	CreatedAt                            time.Time
	StartedAt, CompletedAt               *time.Time
}

// JobSample is what the workflow metrics need of one job.
type JobSample struct {
	Type, Status                                  string
	CreatedAt                                     time.Time
	DispatchedAt, ExternalCompletedAt, ResolvedAt *time.Time
}

// StepSample is one trace step: its status and the agent that ran it.
type StepSample struct {
	Agent, Status string
}

// WorkflowSamples are the records of a window, read for GET /api/workflow/metrics.
type WorkflowSamples struct {
	Runs  []RunSample
	Jobs  []JobSample
	Steps []StepSample
}
