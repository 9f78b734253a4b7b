package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/reelforge/reelforge/sdk/engine"
)

// Run states (SPEC.md States and transitions, Run).
const (
	RunPending   = "pending"
	RunRunning   = "running"
	RunCompleted = "completed"
	RunFailed    = "failed"
	RunCancelled = "cancelled"
	RunPaused    = "paused"
)

// Run.Trigger values (SPEC.md Run.trigger): what started a run.
const (
	TriggerManual    = "manual"
	TriggerScheduler = "scheduler"
	TriggerWebhook   = "webhook"
	TriggerAPI       = "api"
)

// Triggers are the Run.Trigger values, as the API documents and checks them.
var Triggers = []string{TriggerScheduler, TriggerManual, TriggerWebhook, TriggerAPI}

// Run is one workflow execution.
type Run struct {
	ID             string          `json:"run_id"`
	WorkflowID     string          `json:"workflow_id"`
	UserID         string          `json:"user_id"`
	ProjectID      string          `json:"project_id"`
	Status         string          `json:"status"`
	Progress       float64         `json:"progress"`
	CurrentStep    string          `json:"current_step"`
	Inputs         json.RawMessage `json:"inputs"`
	Outputs        json.RawMessage `json:"outputs"`
	UserContext    json.RawMessage `json:"user_context"`
	ProjectContext json.RawMessage `json:"project_context"`
	Trigger        string          `json:"trigger"`
	TriggeredBy    string          `json:"triggered_by"`
	Engine         string          `json:"engine"`   // the engine that ran (or runs) it
	Degraded       string          `json:"degraded"` // why it ran on a fallback engine, if it did
	Error          json.RawMessage `json:"error"`
	Awaiting       json.RawMessage `json:"awaiting"`
	ResumeInput    json.RawMessage `json:"resume_input"`
	Attempt        int             `json:"attempt"`
	ClaimedBy      string          `json:"claimed_by"`
	LeaseUntil     *time.Time      `json:"lease_until"`
	CreatedAt      time.Time       `json:"created_at"`
	UpdatedAt      time.Time       `json:"updated_at"`
	StartedAt      *time.Time      `json:"started_at"`
	CompletedAt    *time.Time      `json:"completed_at"`
	// Recoveries counts the claims of this run from a host that stopped renewing its lease.
	Recoveries int `json:"recoveries"`
}

// Terminal reports whether the run can no longer change.
func (r *Run) Terminal() bool {
	return r.Status == RunCompleted || r.Status == RunFailed || r.Status == RunCancelled
}

// RunUpdate is a guarded state change of a run. Empty fields are left as they are.
type RunUpdate struct {
	From        []string        // the states the run may be in (required): the update's guard
	Status      string          // the new status (required)
	Owner       string          // when set, the run must be claimed by Owner
	Outputs     json.RawMessage // set when not nil
	Error       json.RawMessage // set when not nil
	Awaiting    json.RawMessage // set when not nil
	ResumeInput json.RawMessage // set when not nil
	Inputs      json.RawMessage // set when not nil
	Engine      string          // set when not empty
	Degraded    *string         // set when not nil
	ClearError  bool            // error = NULL
	ClearAwait  bool            // awaiting = NULL
	ClearOutput bool            // outputs = NULL
	Started     bool            // started_at = now when unset
	Completed   bool            // completed_at = now
	Lease       *time.Time      // lease_until = *Lease (claimed_by kept)
	Release     bool            // lease_until = NULL, claimed_by = ''
	Unclaim     bool            // claimed_by = '' (the holder's later guarded updates fail)
	NextAttempt bool            // attempt = attempt + 1
	Progress    *float64        // progress = *Progress
}

// RunLeaseParams extend Owner's lease of running run ID until now+Lease (RenewLease).
type RunLeaseParams struct {
	ID, Owner string
	Lease     time.Duration
}

// ClaimOrphanRunParams hand run ID, listed by ListOrphanRuns(Before), to Holder (ClaimOrphanRun).
type ClaimOrphanRunParams struct {
	ID     string
	Before time.Time
	Holder string
}

// RunProgressParams are the progress report of running run ID (SetRunProgress): Progress, and
// CurrentStep when not empty. With Owner set, the run must be claimed by Owner.
type RunProgressParams struct {
	ID, Owner   string
	Progress    float64
	CurrentStep string
}

// ModelCallKey names one model call of a run's attempt: the call Key (the step and its request)
// of attempt Attempt of run RunID.
type ModelCallKey struct {
	RunID   string
	Attempt int
	Key     string
}

// ResolveJobParams end job ID with Status (completed, failed, timeout) and its Result or Error.
type ResolveJobParams struct {
	ID, Status    string
	Result, Error json.RawMessage // nil: none
}

// DispatchJobParams set job ID running (MarkJobDispatched): Holder, when not "", does its work
// itself and holds it for Lease.
type DispatchJobParams struct {
	ID, Holder string
	Lease      time.Duration
}

// TimeOutJobParams time out job ID when its timeout_at is at or before Now, with Error.
type TimeOutJobParams struct {
	ID    string
	Now   time.Time
	Error json.RawMessage
}

// TraceStep is one stored step of a run's trace; Step is the TraceStep JSON of SPEC.md.
type TraceStep struct {
	RunID     string          `json:"run_id"`
	StepID    string          `json:"step_id"`
	Seq       int             `json:"seq"`
	Status    string          `json:"status"`
	Step      json.RawMessage `json:"step"`
	UpdatedAt time.Time       `json:"updated_at"`
	// Owner, when set, is the claim the step is written under: UpsertTraceStep answers ErrStale
	// unless the run is still claimed by it, so an executor whose claim was taken over cannot
	// write over the new owner's trace. Not stored.
	Owner string `json:"-"`
}

// ModelCall is one model call of a run's execution, made under the claim Owner (the execution's
// fencing token).
type ModelCall struct {
	ModelCallKey
	Owner string
}

// ModelCallState is what BeginModelCall found of a call: its recorded Answer, or the claim that
// HeldBy holds it in progress; neither when the call is now the asker's.
type ModelCallState struct {
	Answer json.RawMessage
	HeldBy string
}

// ModelCallHold is how long a model call in progress is held, from its start and from each renewal
// of its claim's lease: two leases beyond the claim. A claim is taken over only once its lease has
// run out, so the next executor of the step still finds the call held for up to two leases and
// waits that long for the answer of an executor that lost its claim while the model was answering
// (a database that stalled, a host cut off from it or a server restarted, for up to about two
// leases); a host that died holds the step back for that long at most. Beyond it the step asks the
// model again: at least once. One lease beyond was too tight: a host cut off for 4 s under 3 s
// leases often reached the database again after the hold had run out (the fault test, a loaded
// machine), and its answer was asked for again.
func ModelCallHold(lease time.Duration) time.Duration { return 3 * lease }

// Job is an external asynchronous task linked to a run. Its Status is one of the plugin protocol's
// job states, engine.JobPending, JobRunning, JobCompleted, JobFailed or JobTimeout (SPEC.md Job).
type Job struct {
	ID           string          `json:"job_id"`
	RunID        string          `json:"run_id"`
	StepID       string          `json:"step_id"`
	Type         string          `json:"type"`
	Status       string          `json:"status"`
	Request      json.RawMessage `json:"request"`
	Callback     json.RawMessage `json:"callback"`
	Result       json.RawMessage `json:"result"`
	Error        json.RawMessage `json:"error"`
	RetryCount   int             `json:"retry_count"`
	MaxRetries   int             `json:"max_retries"`
	CreatedAt    time.Time       `json:"created_at"`
	UpdatedAt    time.Time       `json:"updated_at"`
	TimeoutAt    time.Time       `json:"timeout_at"`
	DispatchedAt *time.Time      `json:"dispatched_at"`
	ResolvedAt   *time.Time      `json:"resolved_at"`
	// HeldBy names the host life doing the job's work itself (a local render); "" for a job handed
	// to an external executor, which may call back whatever happens to the host that sent it.
	HeldBy string `json:"held_by"`
	// LeaseUntil is when HeldBy's hold runs out unless renewed: past it, the work was interrupted.
	LeaseUntil *time.Time `json:"lease_until"`
}

// Abandoned reports whether the job is unresolved and held by a host whose lease ran out at now:
// its work stopped with that host, and no callback will come.
func (j *Job) Abandoned(now time.Time) bool {
	return !j.Resolved() && j.HeldBy != "" && (j.LeaseUntil == nil || j.LeaseUntil.Before(now))
}

// Resolved reports whether the job reached an end state.
func (j *Job) Resolved() bool {
	return j.Status != engine.JobPending && j.Status != engine.JobRunning
}

// RunQuota caps the runs one user may create: at most Limit created at or after Since.
type RunQuota struct {
	Since time.Time
	Limit int
}

// ListRunsParams filters a user's runs.
type ListRunsParams struct {
	UserID     string
	Status     string
	WorkflowID string
	Limit      int
	Offset     int
}

// Runs stores workflow runs, trace steps and jobs. State changes are guarded: they name the states
// they move from and answer ErrStale when the run (or job) is in another one.
type Runs interface {
	// CreateRun stores a new run (status pending unless set).
	CreateRun(ctx context.Context, r *Run) error
	GetRun(ctx context.Context, id string) (*Run, error)
	// ListRuns lists the runs of p.UserID, newest first, and the total matching.
	ListRuns(ctx context.Context, p ListRunsParams) ([]Run, int, error)
	// DeleteRun removes a finished run of userID (completed, failed or cancelled) with its trace
	// steps, jobs and asset rows, in one transaction: ErrNotFound when userID has no run id,
	// ErrStale when it is not finished. The files its assets name are the caller's to remove first.
	DeleteRun(ctx context.Context, id, userID string) error
	// CreateRunInQuota stores r like CreateRun when r.UserID created fewer than q.Limit runs at or
	// after q.Since, else answers ErrQuotaExceeded and stores nothing; ErrNotFound when there is no
	// such user. Counting and storing are one transaction that holds the user's row, so concurrent
	// starts by one user (on any host) take turns and never pass the limit together.
	CreateRunInQuota(ctx context.Context, r *Run, q RunQuota) error
	// ClaimRun takes one runnable run for owner until now+lease: a pending run, or a running one
	// whose lease expired (its host died, or it was handed back for re-execution). ErrNotFound when
	// there is none.
	ClaimRun(ctx context.Context, owner string, lease time.Duration) (*Run, error)
	// RenewLease extends p.Owner's lease of a running run, and the holds of p.Owner's model calls
	// in progress to ModelCallHold(p.Lease) from now; ErrStale when p.Owner no longer holds the run
	// or its lease has run out (by the database clock) before the renewal landed.
	RenewLease(ctx context.Context, p RunLeaseParams) error
	// FenceRun answers ErrStale unless run id is claimed by owner (ErrNotFound: no such run): the
	// check of a claim's fencing token before a side effect of its execution. In a transaction
	// on PostgreSQL it holds the run's row, so a claim by another executor waits for the
	// transaction's end: what it writes lands under the claim it checked.
	FenceRun(ctx context.Context, id, owner string) error
	// TakeBackRuns ends at once the leases of the pending and running runs claimed by host's
	// executors (claims named host + "/..."), so the next ClaimRun takes them over as recoveries. A
	// host calls it at start, before it claims anything: those claims are its previous life's.
	// Their model calls in progress are released too (ReleaseModelCall): nobody will answer them.
	TakeBackRuns(ctx context.Context, host string) (int64, error)
	// UpdateRun moves the run from one of u.From to u.Status in one guarded UPDATE and returns it.
	UpdateRun(ctx context.Context, id string, u RunUpdate) (*Run, error)
	// ListOrphanRuns lists running runs that nothing drives: no lease, no unresolved job, and no
	// change since before (a lost update, or an engine that waits for nothing).
	ListOrphanRuns(ctx context.Context, before time.Time, limit int) ([]string, error)
	// ClaimOrphanRun hands run p.ID, listed by ListOrphanRuns(p.Before), to the executor again:
	// its lease expires now and claimed_by is p.Holder, so the next ClaimRun takes it as a
	// recovery. ErrStale when it is no longer an orphan by that listing's test (it was handed
	// back, claimed or moved on since).
	ClaimOrphanRun(ctx context.Context, p ClaimOrphanRunParams) (*Run, error)
	// SetRunProgress sets progress and current step of a running run; an empty p.CurrentStep
	// keeps the one recorded (a progress report between steps still names the step last
	// started). With p.Owner set, only while the run is claimed by p.Owner (ErrStale otherwise).
	SetRunProgress(ctx context.Context, p RunProgressParams) error

	// UpsertTraceStep creates or replaces the step (run_id, step_id), keeping its first position.
	UpsertTraceStep(ctx context.Context, s *TraceStep) error
	ListTraceSteps(ctx context.Context, runID string) ([]TraceStep, error)

	// GetModelCall answers the model's recorded answer to call k (ErrNotFound when there is
	// none, or the call is still in progress).
	GetModelCall(ctx context.Context, k ModelCallKey) (json.RawMessage, error)
	// BeginModelCall is asked by an execution before it calls the model: it answers the recorded
	// answer of c's call when there is one (a step executed again reads it back instead of asking
	// again), or the claim holding the call when another execution's call of it is in progress
	// (its hold not run out by the database's clock: wait for its answer), or neither, and then
	// the call is c.Owner's, held for ModelCallHold(lease). ErrStale when the run is no longer
	// claimed by c.Owner.
	BeginModelCall(ctx context.Context, c ModelCall, lease time.Duration) (ModelCallState, error)
	// PutModelCall records the model's answer to call k, whoever holds the call (the answer is a
	// fact about the run, and a late one saves the next execution a call); a call answered
	// already keeps its first answer.
	PutModelCall(ctx context.Context, k ModelCallKey, result json.RawMessage) error
	// ReleaseModelCall ends c.Owner's hold of a call it could not answer (the model failed, or the
	// call was cut short): the next execution of the step asks at once.
	ReleaseModelCall(ctx context.Context, c ModelCall) error

	CreateJob(ctx context.Context, j *Job) error
	GetJob(ctx context.Context, id string) (*Job, error)
	ListRunJobs(ctx context.Context, runID string) ([]Job, error)
	// ResolveJob moves a pending or running job to p.Status (completed, failed, timeout) with its
	// result or error; ErrStale when it was resolved already.
	ResolveJob(ctx context.Context, p ResolveJobParams) (*Job, error)
	// MarkJobDispatched sets a pending job running. A p.Holder other than "" does the job's work
	// itself and holds it until now+p.Lease, by the database's clock on PostgreSQL (renewed with
	// RenewJobLeases).
	MarkJobDispatched(ctx context.Context, p DispatchJobParams) error
	// RenewJobLeases extends the leases of the unresolved jobs holder holds.
	RenewJobLeases(ctx context.Context, holder string, lease time.Duration) (int64, error)
	// TakeBackJobs ends at once the leases of the unresolved jobs held by host's lives (holders
	// named host + "/..."); a host calls it at start, before it dispatches anything.
	TakeBackJobs(ctx context.Context, host string) (int64, error)
	// ListAbandonedJobs lists unresolved held jobs whose lease ran out before now (on PostgreSQL,
	// by the database's clock, which sets and renews job leases: hosts' clocks may disagree).
	ListAbandonedJobs(ctx context.Context, now time.Time, limit int) ([]Job, error)
	// RetryJob gives a timed-out (still unresolved) job another attempt until timeoutAt; ErrStale
	// when another sweeper did first or it was resolved.
	RetryJob(ctx context.Context, id string, timeoutAt time.Time) (*Job, error)
	// ListDueJobs lists unresolved jobs whose timeout_at passed.
	ListDueJobs(ctx context.Context, now time.Time, limit int) ([]Job, error)
	// ExtendJob moves the timeout_at of an unresolved job to timeoutAt: its executor said it is
	// still at work, so the job times out only after a silence longer than its timeout. ErrStale
	// when the job was resolved (timed out included), ErrNotFound when there is no such job.
	ExtendJob(ctx context.Context, id string, timeoutAt time.Time) (*Job, error)
	// TimeOutJob resolves an unresolved job whose timeout_at is at or before p.Now as timed out,
	// with p.Error. ErrStale when it was resolved or its deadline moved past p.Now (ExtendJob won
	// the race): then it is not timed out.
	TimeOutJob(ctx context.Context, p TimeOutJobParams) (*Job, error)
}
