// Package scheduler is the scheduler API of SPEC.md and its in-process cron fallback.
//
// The external automation tool drives scheduling in mode automation_managed: every 15 minutes it
// reads GET /api/scheduler/pending-tasks (PendingTasks) and triggers each task
// (POST /api/scheduler/trigger, Trigger). In mode cron, or when the tool has not called for two
// intervals (the fallback, switched on and off by itself), the host runs the same Tick on a
// robfig/cron timer. With several hosts on one PostgreSQL database only the leader (an advisory
// lock) ticks. Every trigger marks the strategy task running in the project's auto_runs by a
// guarded insert, so a late or doubled call starts one run; RunEnded marks it completed (with the
// trace) or failed.
package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/robfig/cron/v3"

	"github.com/reelforge/reelforge/host/auth"
	"github.com/reelforge/reelforge/host/events"
	"github.com/reelforge/reelforge/host/launch"
	"github.com/reelforge/reelforge/host/leader"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/internal/backoff"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// Modes of SCHEDULER_MODE.
const (
	ModeAutomation = "automation_managed"
	ModeCron       = "cron"
)

// Limits of SPEC.md.
const (
	DefaultInterval    = 15 * time.Minute
	MaxProjectsPerTick = 10
	MaxRunsPerProject  = 2
)

// ValidWorkflows are the workflow ids the scheduler can trigger (SPEC.md).
var ValidWorkflows = []string{"voiceover", "graphic", "music", "video", "live", "short_drama"}

// markAutomation names the store mark of the automation tool's last pending-tasks call.
const markAutomation = "automation_last_call"

// Options configure a Scheduler; zero values take the defaults.
type Options struct {
	Mode     string        // automation_managed (default) or cron
	Interval time.Duration // tick interval (default 15 min)
	Runner   launch.Runner // nil: triggers answer 503 RESOURCE_EXHAUSTED
	// Known reports whether a workflow id is a known manifest (nil: ValidWorkflows).
	Known func(id string) bool
	Clock func() time.Time // nil: time.Now
	Log   *slog.Logger
	// Leader is the host's leader (host/leader), which the job sweeper and the time-driven events
	// follow too; nil: the scheduler makes its own of lock LockName (default leader.Name; tests
	// use one per test) and gives it up at Shutdown.
	Leader   *leader.Leader
	LockName string
}

// Store is what the scheduler needs of the database (SyncBlueprint's is BlueprintStore).
type Store interface {
	ListDueStrategyTasks(ctx context.Context, p store.DueStrategyTasksParams) ([]store.StrategyTask, error)
	StartAutoRun(ctx context.Context, a *store.AutoRun) error
	SetAutoRunRun(ctx context.Context, p store.AutoRunRunParams) error
	FinishAutoRun(ctx context.Context, p store.FinishAutoRunParams) error
	GetAutoRun(ctx context.Context, projectID, strategyTaskID string) (*store.AutoRun, error)
	SetSchedulerMark(ctx context.Context, name string, at time.Time) error
	SchedulerMark(ctx context.Context, name string) (time.Time, error)
	TryLeaderLock(ctx context.Context, name string) (lock store.LeaderLock, ok bool, err error)
	GetUser(ctx context.Context, id string) (*store.User, error) // the owner a due task runs as
	events.Outbox                                                // scheduler.task.skipped
}

// Scheduler lists and triggers due strategy tasks. It is safe for concurrent use.
type Scheduler struct {
	st  Store
	opt Options

	mu       sync.Mutex
	started  time.Time // when watching began: the fallback counts from here until the tool calls
	lastCall time.Time // the last pending-tasks call this host saw
	fallback bool
	forced   bool    // the deprecated Start turned the timer on
	last     *Report // the last tick's report
	leader   *leader.Leader
	ownLock  bool // leader is the scheduler's own: Shutdown releases it
	cron     *cron.Cron
	tickMu   sync.Mutex // one tick at a time on this host
}

// New returns a Scheduler over st.
func New(st Store, opt Options) *Scheduler {
	if opt.Mode == "" {
		opt.Mode = ModeAutomation
	}
	if opt.Interval <= 0 {
		opt.Interval = DefaultInterval
	}
	if opt.Clock == nil {
		opt.Clock = time.Now
	}
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	if opt.Known == nil {
		opt.Known = func(id string) bool {
			for _, w := range ValidWorkflows {
				if w == id {
					return true
				}
			}
			return false
		}
	}
	s := &Scheduler{st: st, opt: opt, started: opt.Clock(), leader: opt.Leader}
	if s.leader == nil {
		name := opt.LockName
		if name == "" {
			name = leader.Name
		}
		s.leader, s.ownLock = leader.New(st, name, opt.Log), true
	}
	return s
}

// Status is the answer of GET /api/scheduler/status.
type Status struct {
	Mode               string     `json:"mode"`
	Description        string     `json:"description"`
	IntervalMS         int64      `json:"interval_ms"`
	IntervalMinutes    float64    `json:"interval_minutes"`
	MaxProjectsPerTick int        `json:"max_projects_per_tick"`
	MaxRunsPerProject  int        `json:"max_runs_per_project"`
	ValidWorkflows     []string   `json:"valid_workflows"`
	Timestamp          string     `json:"timestamp"`
	FallbackActive     bool       `json:"fallback_active"`
	LastAutomationCall *time.Time `json:"last_automation_call"`
	// LastTick is what this host's last timer tick did (null before the first).
	LastTick *Report `json:"last_tick"`
}

// Status describes the mode, the limits and the fallback. The last tick is whole for a caller who
// acts for all (an admin, the automation tool) and only the caller's own part for anyone else.
func (s *Scheduler) Status(ctx context.Context, caller *auth.Principal) Status {
	desc := "The automation tool drives the timer: it reads pending-tasks and triggers them every interval; " +
		"the built-in timer takes over when it stops calling for two intervals."
	if s.opt.Mode == ModeCron {
		desc = "The built-in cron timer ticks every interval and triggers due strategy tasks."
	}
	var last *time.Time
	if t := s.LastAutomationCall(ctx); !t.IsZero() {
		last = &t
	}
	tick := s.lastTick()
	if tick != nil && !caller.ActsForAll() {
		tick = tick.For(caller.UserID)
	}
	return Status{
		Mode: s.opt.Mode, Description: desc,
		IntervalMS: s.opt.Interval.Milliseconds(), IntervalMinutes: s.opt.Interval.Minutes(),
		MaxProjectsPerTick: MaxProjectsPerTick, MaxRunsPerProject: MaxRunsPerProject,
		ValidWorkflows: append([]string(nil), ValidWorkflows...),
		Timestamp:      s.opt.Clock().UTC().Format(time.RFC3339Nano),
		FallbackActive: s.FallbackActive(), LastAutomationCall: last, LastTick: tick,
	}
}

func (s *Scheduler) lastTick() *Report {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last == nil {
		return nil
	}
	r := *s.last
	return &r
}

// FallbackActive reports whether the built-in timer has taken over from a silent automation tool
// (for /status and /health).
func (s *Scheduler) FallbackActive() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fallback
}

// Mode returns the configured mode.
func (s *Scheduler) Mode() string { return s.opt.Mode }

// LastAutomationCall returns when the automation tool last read pending-tasks, on any host (zero
// when never).
func (s *Scheduler) LastAutomationCall(ctx context.Context) time.Time {
	s.mu.Lock()
	last := s.lastCall
	s.mu.Unlock()
	if at, err := s.st.SchedulerMark(ctx, markAutomation); err == nil && at.After(last) {
		last = at
	}
	return last
}

// RecordAutomationCall notes a pending-tasks call of the automation tool; a fallback in force
// ends at once.
func (s *Scheduler) RecordAutomationCall(ctx context.Context) {
	now := s.opt.Clock()
	s.mu.Lock()
	s.lastCall = now
	was := s.fallback
	s.fallback = false
	s.mu.Unlock()
	if was {
		s.opt.Log.Info("scheduler: the automation tool is back; built-in fallback timer off")
	}
	if err := s.st.SetSchedulerMark(ctx, markAutomation, now); err != nil {
		s.opt.Log.Warn("scheduler: record automation call", "error", err)
	}
}

// CheckFallback switches the fallback on when the automation tool has not called pending-tasks
// for two intervals (mode automation_managed), and off when it has; it returns the new state.
func (s *Scheduler) CheckFallback(ctx context.Context) bool {
	if s.opt.Mode != ModeAutomation {
		return false
	}
	last := s.LastAutomationCall(ctx)
	now := s.opt.Clock()
	s.mu.Lock()
	if last.Before(s.started) {
		last = s.started
	}
	silent := now.Sub(last) >= 2*s.opt.Interval
	was := s.fallback
	s.fallback = silent
	s.mu.Unlock()
	switch {
	case silent && !was:
		s.opt.Log.Warn("scheduler: the automation tool has not called pending-tasks for two intervals; built-in fallback timer on",
			"last_call", last, "interval", s.opt.Interval)
	case !silent && was:
		s.opt.Log.Info("scheduler: the automation tool is back; built-in fallback timer off")
	}
	return silent
}

// PendingTask is one due strategy task as pending-tasks lists it.
type PendingTask struct {
	WorkflowID     string         `json:"workflow_id"`
	ProjectID      string         `json:"project_id"`
	ProjectName    string         `json:"project_name"`
	StrategyTaskID string         `json:"strategy_task_id"`
	Inputs         map[string]any `json:"inputs"`
	TaskSummary    string         `json:"task_summary"`
	TaskDueDate    string         `json:"task_due_date"`
	Priority       string         `json:"priority"`
}

// PendingTasks lists up to limit due strategy tasks that have no running or completed auto_run,
// by priority then due date. The automation tool (an automation key) and admins get every user's
// tasks, and their call is the automation tool's heartbeat (it ends a fallback); anyone else gets
// their own projects' tasks and moves nothing.
func (s *Scheduler) PendingTasks(ctx context.Context, user *auth.Principal, limit int) ([]PendingTask, error) {
	p := store.DueStrategyTasksParams{Today: s.today(), Limit: limit}
	if user.ActsForAll() {
		s.RecordAutomationCall(ctx)
	} else {
		p.UserID = user.UserID
	}
	due, err := s.st.ListDueStrategyTasks(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("scheduler: pending tasks: %w", err)
	}
	out := make([]PendingTask, 0, len(due))
	for _, t := range due {
		out = append(out, PendingTask{WorkflowID: t.WorkflowID, ProjectID: t.ProjectID, ProjectName: t.ProjectName,
			StrategyTaskID: t.TaskID, Inputs: inputsOf(&t), TaskSummary: t.Summary, TaskDueDate: t.DueDate, Priority: t.Priority})
	}
	return out, nil
}

func inputsOf(t *store.StrategyTask) map[string]any {
	in := map[string]any{}
	if len(t.Inputs) > 0 {
		_ = json.Unmarshal(t.Inputs, &in) // stored by ParseBlueprint from an object
	}
	in["summary"], in["platform"] = t.Summary, t.Platform
	return in
}

func (s *Scheduler) today() string { return s.opt.Clock().UTC().Format(time.DateOnly) }

// TriggerParams trigger one strategy task. The caller has checked the project (access.Project).
type TriggerParams struct {
	WorkflowID     string
	ProjectID      string
	StrategyTaskID string // empty: an ad-hoc id is made
	Inputs         map[string]any
	Source         string // trigger_source, recorded as the run's triggered_by
	User           *auth.Principal
}

// Triggered is the answer of a trigger.
type Triggered struct {
	RunID          string `json:"run_id"`
	WorkflowID     string `json:"workflow_id"`
	ProjectID      string `json:"project_id"`
	StrategyTaskID string `json:"strategy_task_id"`
	Status         string `json:"status"`
	TriggeredAt    string `json:"triggered_at"`
}

// Trigger marks the strategy task running in the project's auto_runs and starts its run. An
// unknown workflow is 404 WORKFLOW_NOT_FOUND; a task already running is 409
// WORKFLOW_ALREADY_RUNNING, so a doubled trigger starts one run; a task whose run completed is 409
// WORKFLOW_INVALID_STATE (it runs once; one whose run failed is started again).
func (s *Scheduler) Trigger(ctx context.Context, p TriggerParams) (*Triggered, error) {
	if p.WorkflowID == "" {
		return nil, errcode.Invalid("workflow_id", "is required")
	}
	if p.ProjectID == "" {
		return nil, errcode.Invalid("project_id", "is required")
	}
	if !s.opt.Known(p.WorkflowID) {
		return nil, errcode.Newf(errcode.WorkflowNotFound, "Workflow %q not found", p.WorkflowID)
	}
	if s.opt.Runner == nil {
		return nil, errcode.New(errcode.ResourceExhausted, "No workflow runner is available")
	}
	if p.StrategyTaskID == "" {
		p.StrategyTaskID = "adhoc-" + uuid.NewString()
	}
	if p.Source == "" {
		p.Source = store.TriggerScheduler
	}
	at := s.opt.Clock().UTC()
	err := s.st.StartAutoRun(ctx, &store.AutoRun{ProjectID: p.ProjectID, StrategyTaskID: p.StrategyTaskID, WorkflowID: p.WorkflowID})
	if errors.Is(err, store.ErrConflict) {
		// The store refused the start; the mark's state (read after it) only picks the answer.
		if a, gerr := s.st.GetAutoRun(ctx, p.ProjectID, p.StrategyTaskID); gerr == nil && a.Status == store.AutoRunCompleted {
			return nil, errcode.Newf(errcode.WorkflowInvalidState, "Strategy task %q has completed already", p.StrategyTaskID)
		}
		return nil, errcode.Newf(errcode.WorkflowAlreadyRunning, "Strategy task %q is already running", p.StrategyTaskID)
	}
	if err != nil {
		return nil, fmt.Errorf("scheduler: mark auto run: %w", err)
	}
	inputs := p.Inputs
	if inputs == nil {
		inputs = map[string]any{}
	}
	runID, err := s.opt.Runner.Start(ctx, launch.Params{Workflow: p.WorkflowID, Inputs: inputs, User: p.User,
		ProjectID: p.ProjectID, StrategyTaskID: p.StrategyTaskID, Trigger: store.TriggerScheduler, TriggeredBy: p.Source})
	if err != nil {
		if ferr := s.st.FinishAutoRun(context.WithoutCancel(ctx), store.FinishAutoRunParams{ProjectID: p.ProjectID,
			StrategyTaskID: p.StrategyTaskID, Status: store.AutoRunFailed}); ferr != nil && !errors.Is(ferr, store.ErrStale) {
			s.opt.Log.Warn("scheduler: release auto run", "project_id", p.ProjectID, "strategy_task_id", p.StrategyTaskID, "error", ferr)
		}
		return nil, err
	}
	if err := s.st.SetAutoRunRun(ctx, store.AutoRunRunParams{ProjectID: p.ProjectID,
		StrategyTaskID: p.StrategyTaskID, RunID: runID}); err != nil && !errors.Is(err, store.ErrStale) {
		s.opt.Log.Warn("scheduler: record run of auto run", "run_id", runID, "error", err)
	}
	return &Triggered{RunID: runID, WorkflowID: p.WorkflowID, ProjectID: p.ProjectID, StrategyTaskID: p.StrategyTaskID,
		Status: "running", TriggeredAt: at.Format(time.RFC3339Nano)}, nil
}

// RunEnded ends the auto_run mark of a run the scheduler started: completed (with the trace) or
// failed. Other runs are ignored.
func (s *Scheduler) RunEnded(ctx context.Context, e launch.Ended) {
	stid := e.StrategyTaskID()
	if stid == "" || e.ProjectID == "" {
		return
	}
	status := store.AutoRunFailed
	if e.Status == "completed" {
		status = store.AutoRunCompleted
	}
	err := s.st.FinishAutoRun(ctx, store.FinishAutoRunParams{ProjectID: e.ProjectID, StrategyTaskID: stid, RunID: e.RunID,
		Status: status, Trace: e.Trace})
	if err != nil && !errors.Is(err, store.ErrStale) && !errors.Is(err, store.ErrNotFound) {
		s.opt.Log.Warn("scheduler: finish auto run", "run_id", e.RunID, "error", err)
	}
}

// Report says what one tick did.
type Report struct {
	At       time.Time `json:"at"`
	Due      int       `json:"due"`      // due tasks considered
	Started  []string  `json:"started"`  // run ids
	Projects int       `json:"projects"` // projects that got a run
	Failed   int       `json:"failed"`   // triggers refused or failed (the task stays due)
	Skipped  []Skip    `json:"skipped"`  // due tasks not started for a reason of their owner's (quota)

	// byUser is the same, split by the tasks' owners: what /status shows an ordinary user (For).
	byUser map[string]*Report
}

// For is the part of the report about userID's own projects (issue 37: one tenant's run ids and
// skipped tasks are not another's to see).
func (r *Report) For(userID string) *Report {
	out := Report{At: r.At, Started: []string{}, Skipped: []Skip{}}
	if u := r.byUser[userID]; u != nil {
		out.Due, out.Projects, out.Failed = u.Due, u.Projects, u.Failed
		out.Started = append(out.Started, u.Started...)
		out.Skipped = append(out.Skipped, u.Skipped...)
	}
	return &out
}

// owner is the part of the report of one user, made on first use.
func (r *Report) owner(userID string) *Report {
	if r.byUser == nil {
		r.byUser = map[string]*Report{}
	}
	u := r.byUser[userID]
	if u == nil {
		u = &Report{}
		r.byUser[userID] = u
	}
	return u
}

// Skip is a due task a tick did not start; it stays due.
type Skip struct {
	ProjectID      string `json:"project_id"`
	StrategyTaskID string `json:"strategy_task_id"`
	WorkflowID     string `json:"workflow_id"`
	UserID         string `json:"user_id"`
	Code           string `json:"code"`
	Reason         string `json:"reason"`
	RetryAfter     int    `json:"retry_after_seconds,omitempty"`
}

// TickNow triggers due strategy tasks: at most MaxProjectsPerTick projects and
// MaxRunsPerProject running runs per project. Tasks left over stay due, so a missed or cut tick
// is caught up by the next.
func (s *Scheduler) TickNow(ctx context.Context) (Report, error) {
	return s.tick(ctx, "")
}

func (s *Scheduler) tick(ctx context.Context, onlyProject string) (rep Report, err error) {
	s.tickMu.Lock()
	defer s.tickMu.Unlock()
	rep = Report{At: s.opt.Clock().UTC(), Started: []string{}, Skipped: []Skip{}}
	defer func() {
		if err == nil {
			s.mu.Lock()
			s.last = &rep
			s.mu.Unlock()
		}
	}()
	// The first projects in task order (priority, due date) that have a free run slot, then
	// their due tasks.
	p := store.DueStrategyTasksParams{Today: s.today(), Limit: MaxProjectsPerTick * MaxRunsPerProject * 10}
	if onlyProject != "" {
		p.ProjectIDs = []string{onlyProject}
	}
	first, err := s.st.ListDueStrategyTasks(ctx, p)
	if err != nil {
		return rep, fmt.Errorf("scheduler: tick: %w", err)
	}
	var pick []string
	seen := map[string]bool{}
	for _, t := range first {
		if !seen[t.ProjectID] && t.RunningRuns < MaxRunsPerProject && len(pick) < MaxProjectsPerTick {
			pick = append(pick, t.ProjectID)
		}
		seen[t.ProjectID] = true
	}
	if len(pick) == 0 {
		return rep, nil
	}
	p.ProjectIDs = pick
	due, err := s.st.ListDueStrategyTasks(ctx, p)
	if err != nil {
		return rep, fmt.Errorf("scheduler: tick: %w", err)
	}
	started := map[string]int{}
	owners := map[string]*auth.Principal{}
	for _, t := range due {
		rep.Due++
		mine := rep.owner(t.UserID)
		mine.Due++
		n, seen := started[t.ProjectID]
		if !seen && rep.Projects >= MaxProjectsPerTick {
			continue
		}
		if n+t.RunningRuns >= MaxRunsPerProject {
			continue
		}
		user, ok := owners[t.UserID]
		if !ok {
			user = &auth.Principal{UserID: t.UserID}
			if u, err := s.st.GetUser(ctx, t.UserID); err == nil {
				user.Role, user.Username = u.Role, u.Username
			}
			owners[t.UserID] = user
		}
		res, err := s.Trigger(ctx, TriggerParams{WorkflowID: t.WorkflowID, ProjectID: t.ProjectID, StrategyTaskID: t.TaskID,
			Inputs: inputsOf(&t), Source: "scheduler-tick", User: user})
		if e := errcode.As(err); e != nil && e.Code == errcode.QuotaExceeded {
			sk := Skip{ProjectID: t.ProjectID, StrategyTaskID: t.TaskID, WorkflowID: t.WorkflowID,
				UserID: t.UserID, Code: string(e.Code), Reason: e.Message(), RetryAfter: e.RetryAfter}
			s.skipped(ctx, &rep, sk)
			mine.Skipped = append(mine.Skipped, sk)
			continue
		}
		if err != nil {
			rep.Failed++
			mine.Failed++
			s.opt.Log.Warn("scheduler: tick trigger", "project_id", t.ProjectID, "strategy_task_id", t.TaskID, "error", err)
			continue
		}
		if !seen {
			rep.Projects++
			mine.Projects++
		}
		started[t.ProjectID] = n + 1
		rep.Started = append(rep.Started, res.RunID)
		mine.Started = append(mine.Started, res.RunID)
	}
	if len(rep.Started) > 0 || rep.Failed > 0 || len(rep.Skipped) > 0 {
		s.opt.Log.Info("scheduler: tick", "due", rep.Due, "started", len(rep.Started), "projects", rep.Projects,
			"failed", rep.Failed, "skipped", len(rep.Skipped))
	}
	return rep, nil
}

// skipped records a due task the tick did not start: in the report (and so in the status) and as
// a scheduler.task.skipped event of the task's owner, once per task and day.
func (s *Scheduler) skipped(ctx context.Context, rep *Report, sk Skip) {
	rep.Skipped = append(rep.Skipped, sk)
	s.opt.Log.Info("scheduler: due task skipped", "project_id", sk.ProjectID, "strategy_task_id", sk.StrategyTaskID,
		"code", sk.Code, "reason", sk.Reason)
	id := uuid.NewSHA1(uuid.NameSpaceOID, []byte("skip:"+sk.ProjectID+":"+sk.StrategyTaskID+":"+s.today())).String()
	err := events.Emit(ctx, s.st, events.Event{ID: id, Name: events.SchedulerTaskSkipped, UserID: sk.UserID, ProjectID: sk.ProjectID,
		Data: map[string]any{"project_id": sk.ProjectID, "strategy_task_id": sk.StrategyTaskID, "workflow_id": sk.WorkflowID,
			"userId": sk.UserID, "code": sk.Code, "reason": sk.Reason, "retry_after_seconds": sk.RetryAfter}})
	if err != nil && !errors.Is(err, store.ErrConflict) {
		s.opt.Log.Warn("scheduler: emit skipped event", "project_id", sk.ProjectID, "error", err)
	}
}

// Leader reports whether this host is the leader (Options.Leader), taking the lock when free.
func (s *Scheduler) Leader(ctx context.Context) bool { return s.leader.IsLeader(ctx) }

// Periodic is what the timer runs every interval: it checks the fallback and, in mode cron or
// while the fallback is on, ticks when this host is the leader. ticked reports whether it did.
func (s *Scheduler) Periodic(ctx context.Context) (rep Report, ticked bool, err error) {
	fallback := s.CheckFallback(ctx)
	s.mu.Lock()
	forced := s.forced
	s.mu.Unlock()
	if s.opt.Mode != ModeCron && !fallback && !forced {
		return rep, false, nil
	}
	if !s.Leader(ctx) {
		return rep, false, nil
	}
	rep, err = s.TickNow(ctx)
	return rep, true, err
}

// Serve starts the timer: Periodic every interval (an @every cron spec) and a fallback check
// five times an interval. It returns at once; Shutdown stops it.
func (s *Scheduler) Serve(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cron != nil {
		return nil
	}
	base := context.WithoutCancel(ctx)
	c := cron.New(cron.WithChain(cron.SkipIfStillRunning(cron.DiscardLogger)))
	// After a failed tick (the database down, its disk full) the ticks that fall within the
	// host's back-off are skipped; SkipIfStillRunning keeps these two to one goroutine.
	retry := backoff.Retry{Log: s.opt.Log, What: "scheduler: periodic tick"}
	var resume time.Time
	if _, err := c.AddFunc(fmt.Sprintf("@every %s", s.opt.Interval), func() {
		if time.Now().Before(resume) {
			return
		}
		if _, _, err := s.Periodic(base); err != nil {
			resume = time.Now().Add(retry.Failed(err))
		} else {
			retry.Succeeded()
		}
	}); err != nil {
		return fmt.Errorf("scheduler: cron: %w", err)
	}
	if s.opt.Mode == ModeAutomation {
		check := max(s.opt.Interval/5, time.Second)
		if _, err := c.AddFunc(fmt.Sprintf("@every %s", check), func() { s.CheckFallback(base) }); err != nil {
			return fmt.Errorf("scheduler: cron: %w", err)
		}
	}
	s.started = s.opt.Clock()
	c.Start()
	s.cron = c
	s.opt.Log.Info("scheduler: timer started", "mode", s.opt.Mode, "interval", s.opt.Interval)
	return nil
}

// Shutdown stops the timer, waits for a tick in flight and gives up the leader lock when it is the
// scheduler's own (a shared Options.Leader is its owner's to release).
func (s *Scheduler) Shutdown() {
	s.mu.Lock()
	c := s.cron
	s.cron = nil
	s.mu.Unlock()
	if c != nil {
		<-c.Stop().Done()
	}
	if s.ownLock {
		s.leader.Release()
	}
}
