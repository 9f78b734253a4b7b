// Package tasks runs the project task table of SPEC.md: creation (PENDING), the worker that moves
// tasks PENDING -> QUEUED -> RUNNING by guarded updates and starts a workflow run for each, the end
// of a run (SUCCESS with asset records, a retry with back-off, FAILED or CANCELLED), and cancel.
//
// Every transition is one guarded UPDATE in the store, so two hosts never move a task twice, and
// every transition sends a task:status frame to the project's subscribers.
package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/auth"
	"github.com/reelforge/reelforge/host/events"
	"github.com/reelforge/reelforge/host/launch"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/internal/backoff"
	"github.com/reelforge/reelforge/internal/tick"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// orphanAfter is how long a task may stay RUNNING without a run before the worker takes it back
// (the host that moved it died before its run was stored).
const orphanAfter = 2 * time.Minute

// Options configure a Service; zero values take the defaults.
type Options struct {
	Runner   launch.Runner     // nil: tasks wait in PENDING until a runner is wired
	Notifier events.Notifier   // nil: frames are dropped
	Log      *slog.Logger      // nil: discarded
	Known    func(string) bool // reports whether a workflow id exists (nil: only the type map)
	Poll     time.Duration     // worker pass interval (default 500 ms); retries wait for a pass
	// Backoff returns the delay before retry n (0-based); default 1 s, 2 s, 4 s.
	Backoff func(n int) time.Duration
}

// Store is what the task service needs of the database.
type Store interface {
	store.Transactor
	Now() time.Time
	GetUser(ctx context.Context, id string) (*store.User, error)
	CreateTask(ctx context.Context, t *store.Task) error
	GetTask(ctx context.Context, id string) (*store.Task, error)
	UpdateTask(ctx context.Context, u store.TaskUpdate) (*store.Task, error)
	ClaimTasks(ctx context.Context, p store.ClaimTasksParams) ([]store.Task, error)
	ListTaskAssets(ctx context.Context, taskID string) ([]store.Asset, error)
	events.Outbox
}

// Service creates, dispatches, finishes and cancels project tasks. It is safe for concurrent use.
type Service struct {
	st     Store
	opt    Options
	wake   chan struct{}
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// New returns a Service over st.
func New(st Store, opt Options) *Service {
	if opt.Notifier == nil {
		opt.Notifier = events.Discard{}
	}
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	if opt.Poll <= 0 {
		opt.Poll = 500 * time.Millisecond
	}
	if opt.Backoff == nil {
		opt.Backoff = func(n int) time.Duration { return time.Second << min(n, 10) }
	}
	return &Service{st: st, opt: opt, wake: make(chan struct{}, 1)}
}

// CreateParams create a task. The caller has checked the project through access.Project.
type CreateParams struct {
	User        *auth.Principal
	ProjectID   string
	Type        string
	InputParams json.RawMessage // an object; empty is {}
}

// Create stores a new task in PENDING and wakes the worker. The task's run is checked now, as
// the runner will check it when the worker starts it: a type that names no workflow is 400
// VALIDATION_ERROR, and so are inputs the workflow refuses (naming the field).
func (s *Service) Create(ctx context.Context, p CreateParams) (*store.Task, error) {
	wf := s.WorkflowFor(p.Type)
	if wf == "" {
		return nil, errcode.Invalid("type", fmt.Sprintf("%q is not a task type: use a workflow id (GET /api/workflow/manifests)", p.Type))
	}
	if s.opt.Runner != nil {
		inputs := map[string]any{}
		if len(p.InputParams) > 0 && string(p.InputParams) != "null" {
			if err := json.Unmarshal(p.InputParams, &inputs); err != nil {
				return nil, errcode.Invalid("inputParams", "must be an object")
			}
		}
		if err := s.opt.Runner.Check(ctx, wf, inputs); err != nil {
			if errcode.Is(err, errcode.WorkflowNotFound) {
				return nil, errcode.Invalid("type", fmt.Sprintf("%q is not a task type: its workflow is not installed", p.Type))
			}
			return nil, err
		}
	}
	t := &store.Task{ID: uuid.NewString(), ProjectID: p.ProjectID, UserID: p.User.UserID, Type: p.Type,
		Status: store.TaskPending, InputParams: p.InputParams, MaxRetries: 3}
	if len(t.InputParams) == 0 || string(t.InputParams) == "null" {
		t.InputParams = json.RawMessage("{}")
	}
	err := store.InTx(ctx, s.st, func(tx Store) error {
		if err := tx.CreateTask(ctx, t); err != nil {
			return err
		}
		return emitStatus(ctx, tx, t)
	})
	if err != nil {
		return nil, fmt.Errorf("tasks: create: %w", err)
	}
	s.notify(ctx, t)
	s.Wake()
	return t, nil
}

// Get returns the task when user may see it (its creator or an admin); otherwise 404.
func (s *Service) Get(ctx context.Context, user *auth.Principal, id string) (*store.Task, error) {
	t, err := s.st.GetTask(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !user.IsAdmin() && t.UserID != user.UserID) {
		return nil, errcode.New(errcode.NotFound, "Task not found")
	}
	if err != nil {
		return nil, fmt.Errorf("tasks: get: %w", err)
	}
	return t, nil
}

// Cancel moves a PENDING, QUEUED or RUNNING task to CANCELLED and cancels its run. Another state
// is 409 WORKFLOW_INVALID_STATE; an unknown task or another user's is 404.
func (s *Service) Cancel(ctx context.Context, user *auth.Principal, id string) (*store.Task, error) {
	t, err := s.Get(ctx, user, id)
	if err != nil {
		return nil, err
	}
	msg := "cancelled by the user"
	got, err := s.transitionOnce(ctx, store.TaskUpdate{ID: t.ID, To: store.TaskCancelled, ErrorMessage: &msg, Completed: true,
		From: []string{store.TaskPending, store.TaskQueued, store.TaskRunning}})
	if errors.Is(err, store.ErrStale) {
		cur, _ := s.st.GetTask(ctx, id) // only for the message: a task gone too keeps the state we saw
		state := t.Status
		if cur != nil {
			state = cur.Status
		}
		return nil, errcode.Newf(errcode.WorkflowInvalidState, "Task is %s and cannot be cancelled", strings.ToUpper(state))
	}
	if err != nil {
		return nil, err
	}
	if got.RunID != "" {
		s.cancelRun(ctx, got.RunID)
	}
	return got, nil
}

func (s *Service) cancelRun(ctx context.Context, runID string) {
	if s.opt.Runner == nil {
		return
	}
	if err := s.opt.Runner.Cancel(context.WithoutCancel(ctx), runID); err != nil && !errcode.Is(err, errcode.WorkflowInvalidState) {
		s.opt.Log.Warn("tasks: cancel run", "run_id", runID, "error", err)
	}
}

// WorkflowFor maps a task type to the workflow that produces it ("" for a type that names none):
// a task's type is its workflow's id.
func (s *Service) WorkflowFor(taskType string) string {
	switch taskType {
	case "video", "voiceover", "music", "graphic":
		return taskType
	}
	if s.opt.Known != nil && s.opt.Known(taskType) {
		return taskType
	}
	return ""
}

// Wake asks the worker for a pass now.
func (s *Service) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Start runs the worker until Stop is called or ctx ends. Without a Runner it does nothing.
func (s *Service) Start(ctx context.Context) error {
	if s.opt.Runner == nil {
		s.opt.Log.Info("tasks: no workflow runner wired; tasks stay PENDING")
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil {
		return errors.New("tasks: worker already started")
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel, s.done = cancel, make(chan struct{})
	go func() {
		defer close(s.done)
		poll := tick.NewTicker(s.opt.Poll) // out of phase with the host's other loops
		defer poll.Stop()
		retry := backoff.Retry{Log: s.opt.Log, What: "tasks: worker pass"}
		for {
			if err := s.Step(ctx); err != nil && ctx.Err() == nil {
				// The database failing: the back-off, not the next poll or wake.
				if !backoff.Sleep(ctx, retry.Failed(err)) {
					return
				}
				continue
			}
			retry.Succeeded()
			select {
			case <-ctx.Done():
				return
			case <-poll.C:
			case <-s.wake:
			}
		}
	}()
	return nil
}

// Stop ends the worker and waits for its pass in flight.
func (s *Service) Stop() {
	s.mu.Lock()
	cancel, done := s.cancel, s.done
	s.cancel = nil
	s.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// Step is one worker pass: claim PENDING tasks (-> QUEUED), take back orphaned RUNNING ones
// (-> QUEUED), then dispatch the QUEUED ones whose back-off is over (-> RUNNING, one run each).
func (s *Service) Step(ctx context.Context) error {
	if s.opt.Runner == nil {
		return nil
	}
	queued, err := s.st.ClaimTasks(ctx, store.ClaimTasksParams{From: store.TaskPending, To: store.TaskQueued, Limit: 20})
	for i := range queued {
		s.announce(ctx, &queued[i])
	}
	if err != nil {
		return fmt.Errorf("tasks: claim: %w", err)
	}
	orphans, err := s.st.ClaimTasks(ctx, store.ClaimTasksParams{From: store.TaskRunning, To: store.TaskQueued, Limit: 20,
		StaleBefore: s.st.Now().Add(-orphanAfter)})
	for i := range orphans {
		s.opt.Log.Warn("tasks: re-queued a task left running without a run", "task_id", orphans[i].ID)
		s.announce(ctx, &orphans[i])
	}
	if err != nil {
		return fmt.Errorf("tasks: re-queue: %w", err)
	}
	running, err := s.st.ClaimTasks(ctx, store.ClaimTasksParams{From: store.TaskQueued, To: store.TaskRunning, Limit: 20})
	for i := range running {
		s.announce(ctx, &running[i])
		s.launch(ctx, &running[i])
	}
	if err != nil {
		return fmt.Errorf("tasks: dispatch: %w", err)
	}
	return nil
}

// Dispatch moves one QUEUED task to RUNNING and starts its run. A task already RUNNING refuses a
// second dispatch (409 WORKFLOW_ALREADY_RUNNING).
func (s *Service) Dispatch(ctx context.Context, id string) error {
	t, err := s.st.UpdateTask(ctx, store.TaskUpdate{ID: id, From: []string{store.TaskQueued}, To: store.TaskRunning})
	if errors.Is(err, store.ErrStale) {
		if cur, gerr := s.st.GetTask(ctx, id); gerr == nil && cur.Status == store.TaskRunning {
			return errcode.New(errcode.WorkflowAlreadyRunning, "Task is already running")
		}
		return errcode.New(errcode.WorkflowInvalidState, "Task is not queued")
	}
	if err != nil {
		return err
	}
	s.announce(ctx, t)
	s.launch(ctx, t)
	return nil
}

// launch starts the run of a task this worker moved to RUNNING.
func (s *Service) launch(ctx context.Context, t *store.Task) {
	user := &auth.Principal{UserID: t.UserID}
	if u, err := s.st.GetUser(ctx, t.UserID); err == nil {
		user.Role, user.Username = u.Role, u.Username
	}
	inputs := map[string]any{}
	if err := json.Unmarshal(t.InputParams, &inputs); err != nil || inputs == nil {
		inputs = map[string]any{}
	}
	runID, err := s.opt.Runner.Start(ctx, launch.Params{Workflow: s.WorkflowFor(t.Type), Inputs: inputs, User: user,
		ProjectID: t.ProjectID, Trigger: store.TriggerAPI, TriggeredBy: launch.TriggeredByTask(t.ID)})
	if err != nil {
		// Not every error is the catalogue's: a database that failed under the start is a
		// store error (errcode.As is nil for it).
		msg := err.Error()
		if e := errcode.As(err); e != nil {
			msg = e.Message()
		}
		s.failed(ctx, t.ID, errcode.Of(err), msg)
		return
	}
	_, err = s.st.UpdateTask(ctx, store.TaskUpdate{ID: t.ID, From: []string{store.TaskRunning}, To: store.TaskRunning, RunID: &runID})
	if errors.Is(err, store.ErrStale) {
		if cur, gerr := s.st.GetTask(ctx, t.ID); gerr == nil && cur.Status == store.TaskCancelled {
			s.cancelRun(ctx, runID) // cancelled while the run was starting
		}
		return
	}
	if err != nil {
		s.opt.Log.Warn("tasks: record run", "task_id", t.ID, "run_id", runID, "error", err)
	}
}

// RunEnded finishes the task whose run ended: completed -> SUCCESS (output_data; host/runs has
// recorded the run's files as assets of the task),
// failed -> QUEUED for a retry (network errors and time-outs while retries are left) or FAILED,
// cancelled -> CANCELLED. Runs of no task are ignored.
func (s *Service) RunEnded(ctx context.Context, e launch.Ended) {
	id := launch.TaskOf(e.TriggeredBy)
	if id == "" {
		return
	}
	var err error
	switch e.Status {
	case "completed":
		err = s.succeeded(ctx, id, e)
	case "failed":
		code := errcode.Code(e.ErrorCode())
		if code == "" {
			code = errcode.Unknown
		}
		msg := e.ErrorMessage()
		if msg == "" {
			msg = errcode.Lookup(code).Message
		}
		s.failed(ctx, id, code, msg)
	case "cancelled":
		msg := "the workflow run was cancelled"
		_, err = s.transition(ctx, store.TaskUpdate{ID: id, From: []string{store.TaskRunning}, To: store.TaskCancelled,
			ErrorMessage: &msg, Completed: true})
	}
	if err != nil && !errors.Is(err, store.ErrStale) {
		s.opt.Log.Warn("tasks: finish", "task_id", id, "run_id", e.RunID, "error", err)
	}
}

func (s *Service) succeeded(ctx context.Context, id string, e launch.Ended) error {
	out := e.Outputs
	if len(out) == 0 {
		out = json.RawMessage("{}")
	}
	runID := e.RunID
	empty := ""
	_, err := s.transition(ctx, store.TaskUpdate{ID: id, From: []string{store.TaskRunning}, To: store.TaskSuccess,
		OutputData: out, RunID: &runID, ErrorMessage: &empty, Completed: true})
	return err
}

// retryable reports whether a failure is a network error or a time-out (SPEC.md Limits: retried),
// as opposed to a business error (not retried).
func retryable(c errcode.Code) bool {
	switch c {
	case errcode.WorkflowTimeout, errcode.AgentTimeout, errcode.ExternalService, errcode.GraphRunner,
		errcode.AutomationWebhookFailed, errcode.Chatflow, errcode.ResourceExhausted:
		return true
	}
	return false
}

// failed ends a RUNNING task after an error: back to QUEUED with a back-off while the error is
// retryable and retries are left, else FAILED.
func (s *Service) failed(ctx context.Context, id string, code errcode.Code, msg string) {
	var t *store.Task
	err := s.outcome(ctx, id, func() (err error) { t, err = s.st.GetTask(ctx, id); return err })
	if err != nil {
		s.opt.Log.Warn("tasks: load failed task", "task_id", id, "error", err)
		return
	}
	text := string(code) + ": " + msg
	if retryable(code) && t.RetryCount < t.MaxRetries {
		next := s.st.Now().Add(s.opt.Backoff(t.RetryCount))
		_, err = s.transition(ctx, store.TaskUpdate{ID: id, From: []string{store.TaskRunning}, To: store.TaskQueued,
			IncRetry: true, NextAttemptAt: &next, ErrorMessage: &text, RunID: new(string)})
	} else {
		_, err = s.transition(ctx, store.TaskUpdate{ID: id, From: []string{store.TaskRunning}, To: store.TaskFailed,
			ErrorMessage: &text, Completed: true})
	}
	if err != nil && !errors.Is(err, store.ErrStale) {
		s.opt.Log.Warn("tasks: fail", "task_id", id, "error", err)
	}
}

// outcomeFor bounds how long a task's outcome is retried while the database refuses it: the
// run has ended and nothing will report it again, so a refused write would leave the task
// RUNNING for good (issue 38: outcomes recorded once, the outcome retried, not the work).
const outcomeFor = time.Minute

// transition applies u in a transaction with its outbound events, then sends the frame. A write
// the database refused is retried with the loops' back-off for up to outcomeFor; a stale or
// missing task is not.
func (s *Service) transition(ctx context.Context, u store.TaskUpdate) (*store.Task, error) {
	var t *store.Task
	err := s.outcome(ctx, u.ID, func() (err error) {
		t, err = s.transitionOnce(ctx, u)
		return err
	})
	return t, err
}

// outcome runs write until the database takes it, a stale or missing task refuses it, or
// outcomeFor has passed, waiting with the loops' back-off in between.
func (s *Service) outcome(ctx context.Context, id string, write func() error) error {
	retry := backoff.Retry{Log: s.opt.Log, What: "tasks: record a task's outcome"}
	give := time.Now().Add(outcomeFor)
	for {
		err := write()
		if err == nil || errors.Is(err, store.ErrStale) || errors.Is(err, store.ErrNotFound) || time.Now().After(give) {
			return err
		}
		if !backoff.Sleep(ctx, retry.Failed(err, "task_id", id)) {
			return err
		}
	}
}

func (s *Service) transitionOnce(ctx context.Context, u store.TaskUpdate) (*store.Task, error) {
	var got *store.Task
	err := store.InTx(ctx, s.st, func(tx Store) error {
		t, err := tx.UpdateTask(ctx, u)
		if err != nil {
			return err
		}
		got = t
		if err := emitStatus(ctx, tx, t); err != nil {
			return err
		}
		switch t.Status {
		case store.TaskSuccess:
			made, err := tx.ListTaskAssets(ctx, t.ID)
			if err != nil {
				return err
			}
			return events.Emit(ctx, tx, events.Event{Name: events.TaskCompleted, UserID: t.UserID, ProjectID: t.ProjectID,
				Data: map[string]any{"taskId": t.ID, "projectId": t.ProjectID, "userId": t.UserID, "type": t.Type,
					"runId": t.RunID, "result": t.OutputData, "assets": len(made)}})
		case store.TaskFailed:
			return events.Emit(ctx, tx, events.Event{Name: events.JobFailed, UserID: t.UserID, ProjectID: t.ProjectID,
				Data: map[string]any{"taskId": t.ID, "projectId": t.ProjectID, "userId": t.UserID, "type": t.Type,
					"error": t.ErrorMessage}})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.announce(ctx, got)
	return got, nil
}

func emitStatus(ctx context.Context, tx events.Outbox, t *store.Task) error {
	return events.Emit(ctx, tx, events.Event{Name: events.JobStatusChanged, UserID: t.UserID, ProjectID: t.ProjectID,
		Data: map[string]any{"taskId": t.ID, "projectId": t.ProjectID, "userId": t.UserID, "type": t.Type,
			"status": t.Status, "retryCount": t.RetryCount}})
}

// announce sends the task:status frame of t (ClaimTasks moves tasks outside transition).
func (s *Service) announce(ctx context.Context, t *store.Task) { s.notify(ctx, t) }

func (s *Service) notify(ctx context.Context, t *store.Task) {
	s.opt.Notifier.Notify(ctx, events.Frame{ProjectID: t.ProjectID, UserID: t.UserID, Type: events.FrameTaskStatus,
		Data: map[string]any{"taskId": t.ID, "status": t.Status, "projectId": t.ProjectID}})
}
