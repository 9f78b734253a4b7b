package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/events"
	"github.com/reelforge/reelforge/host/manifest"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/internal/backoff"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// ReportStep implements engine.Host: it stores the step (keyed by step id, first position kept).
func (s *Service) ReportStep(ctx context.Context, runID string, step engine.TraceStep) error {
	return s.reportStep(ctx, runID, "", step)
}

// reportStep is ReportStep under the claim owner ("": none; see store.TraceStep.Owner).
func (s *Service) reportStep(ctx context.Context, runID, owner string, step engine.TraceStep) error {
	if step.StepID == "" {
		return errcode.Invalid("step_id", "is required")
	}
	if step.Inputs == nil {
		step.Inputs = map[string]any{}
	}
	if step.StepName == "" {
		step.StepName = step.StepID
	}
	if step.Status == "" {
		step.Status = engine.StepRunning
	}
	if step.StartedAt == nil && step.Status != engine.StepPending && step.Status != engine.StepSkipped {
		now := s.st.Now()
		step.StartedAt = &now
	}
	b, err := json.Marshal(step)
	if err != nil {
		return errcode.E("runs.ReportStep", errcode.Validation, "trace step is not JSON", err)
	}
	if err := s.st.UpsertTraceStep(ctx, &store.TraceStep{RunID: runID, StepID: step.StepID, Status: step.Status, Step: b, Owner: owner}); err != nil {
		return fmt.Errorf("runs: store trace step: %w", err)
	}
	return nil
}

// ReportProgress implements engine.Host. Progress is kept as a whole percentage (what a UI shows;
// 33.333333333333336 is not), and a report without a step keeps the step last named.
func (s *Service) ReportProgress(ctx context.Context, runID string, progress float64, currentStep string) error {
	return s.reportProgress(ctx, runID, "", progress, currentStep)
}

// reportProgress is ReportProgress under the claim owner ("": none).
func (s *Service) reportProgress(ctx context.Context, runID, owner string, progress float64, currentStep string) error {
	progress = math.Round(min(max(progress, 0), 100))
	if err := s.st.SetRunProgress(ctx, store.RunProgressParams{ID: runID, Owner: owner, Progress: progress, CurrentStep: currentStep}); err != nil {
		if errors.Is(err, store.ErrStale) {
			return nil // the run left running (cancelled) or this claim: nothing to show
		}
		return fmt.Errorf("runs: store progress: %w", err)
	}
	if r, err := s.st.GetRun(ctx, runID); err == nil {
		s.notifyProgress(ctx, r, progress)
	}
	return nil
}

// notifyProgress sends a task:progress frame when the run's progress or current step changed
// since the last frame of the run.
func (s *Service) notifyProgress(ctx context.Context, r *store.Run, progress float64) {
	key := strconv.FormatFloat(progress, 'g', -1, 64) + "|" + r.CurrentStep
	s.mu.Lock()
	same := s.progressSent[r.ID] == key
	s.progressSent[r.ID] = key
	s.mu.Unlock()
	if same {
		return
	}
	s.notifier.Notify(ctx, events.Frame{ProjectID: r.ProjectID, UserID: r.UserID, Type: events.FrameTaskProgress,
		Data: map[string]any{"taskId": r.ID, "runId": r.ID, "progress": int(math.Round(progress)), "current_step": r.CurrentStep}})
}

// policy is the time-out and retry policy of job type typ (the engine registry's, or the
// Options' override in tests) and the engine whose registry entry declares it (nil with an override).
func (s *Service) policy(typ string) (manifest.JobPolicy, *manifest.Engine, bool) {
	if p, ok := s.opts.Policies[typ]; ok {
		_, e, _ := s.Manifests().Job(typ)
		return p, e, true
	}
	return s.Manifests().Job(typ)
}

// callbackPath is the route an external executor of a job type calls back: that of the callback
// kind of the engine that declares the job type.
func (s *Service) callbackPath(typ string) string {
	if _, e, ok := s.Manifests().Job(typ); ok {
		return engine.CallbackPath(e.Callback)
	}
	return engine.CallbackPathAI
}

// CreateJob implements engine.Host: it stores the job with timeout_at and max_retries of its type,
// and with Dispatch submits a generator job to the JobDispatcher.
func (s *Service) CreateJob(ctx context.Context, req *engine.JobRequest) (*engine.Job, error) {
	return s.createJob(ctx, req, "")
}

// createJob is CreateJob under the claim owner ("": none): the job and its event are stored only
// while the run is claimed by owner (store.Runs.FenceRun in their transaction).
func (s *Service) createJob(ctx context.Context, req *engine.JobRequest, owner string) (*engine.Job, error) {
	p, _, ok := s.policy(req.Type)
	if !ok {
		return nil, errcode.Invalid("type", fmt.Sprintf("unknown job type %q: no engine of the registry declares it", req.Type))
	}
	run, err := s.st.GetRun(ctx, req.RunID)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, errcode.New(errcode.NotFound, "Run not found")
		}
		return nil, err
	}
	if req.Type == engine.JobVideogen && s.media != nil && len(req.Request) > 0 {
		// The render gets the creator's material; the same step asks the same, so a step executed
		// again still finds the job it made before.
		r := *req
		if r.Request, err = s.media.AddRunMedia(ctx, run, req.Request); err != nil {
			return nil, fmt.Errorf("runs: material of the render: %w", err)
		}
		req = &r
	}
	// A job created again for the same step after a time-out carries the retry count on. A step
	// executed again (its host died, or the run degraded or was retried) gets the job it made before
	// when that one is still in flight or completed with the same request: expensive generator work
	// is not ordered twice.
	retries := 0
	if prev, err := s.st.ListRunJobs(ctx, req.RunID); err == nil {
		for i := len(prev) - 1; i >= 0; i-- {
			j := &prev[i]
			if j.Type != req.Type || j.StepID != req.StepID {
				continue
			}
			if j.Status == engine.JobTimeout {
				retries = max(retries, j.RetryCount+1)
			}
			if j.Abandoned(s.st.Now()) {
				// Its work stopped with the host doing it (this host's previous life, or
				// another): say so on the job and order the work anew.
				s.interrupt(ctx, j)
				continue
			}
			if req.StepID != "" && engine.IsGeneratorJob(j.Type) && sameJSON(j.Request, req.Request) &&
				(j.Status == engine.JobRunning || j.Status == engine.JobCompleted) {
				return toEngineJob(j), nil
			}
		}
	}
	cbURL := s.opts.CallbackBaseURL + s.callbackPath(req.Type)
	cb, _ := json.Marshal(map[string]any{"url": cbURL, "signature": "sha256 HMAC of the body with CALLBACK_SECRET in X-Signature"}) // strings: Marshal cannot fail
	j := &store.Job{ID: uuid.NewString(), RunID: req.RunID, StepID: req.StepID, Type: req.Type, Request: req.Request,
		Callback: cb, RetryCount: retries, MaxRetries: p.MaxRetries, TimeoutAt: s.st.Now().Add(p.Timeout)}
	if len(j.Request) == 0 {
		j.Request = json.RawMessage(`{}`)
	}
	if err := store.InTx(ctx, s.st, func(tx Store) error {
		if owner != "" {
			if err := tx.FenceRun(ctx, req.RunID, owner); err != nil {
				return err
			}
		}
		if err := tx.CreateJob(ctx, j); err != nil {
			return err
		}
		return events.Emit(ctx, tx, jobEvent(ctx, tx, events.JobStatusChanged, j, nil))
	}); err != nil {
		return nil, fmt.Errorf("runs: store job: %w", err)
	}
	if req.Dispatch {
		// The job is stored: it must now be handed to its executor, or failed, even when the
		// caller is gone (a plugin killed during its CreateJob ends this call's context). A
		// dispatch cut short would leave the job running under this host's lease with nothing
		// working on it, and the step executed again (the run degraded) would await it until
		// its time-out.
		ctx = context.WithoutCancel(ctx)
		s.dispatch(ctx, j)
		if got, err := s.st.GetJob(ctx, j.ID); err == nil {
			j = got
		}
	}
	return toEngineJob(j), nil
}

// dispatch submits a generator job; without a dispatcher, or when it refuses, the job fails.
func (s *Service) dispatch(ctx context.Context, j *store.Job) {
	if !engine.IsGeneratorJob(j.Type) || s.dispatcher == nil {
		msg := fmt.Sprintf("no executor is configured for %s jobs", j.Type)
		s.resolve(ctx, j.ID, engine.JobFailed, nil, &engine.RunError{Code: string(s.jobErrorCode(j.Type)), Message: msg})
		return
	}
	// Work this host does itself is held under this life's lease: if the host dies, the job is
	// known to be interrupted (CreateJob, the sweeper). An external executor holds its own job.
	holder := ""
	if s.dispatcher.Local(j.Type) {
		holder = s.life
	}
	if err := s.st.MarkJobDispatched(ctx, store.DispatchJobParams{ID: j.ID, Holder: holder, Lease: s.opts.Lease}); err != nil {
		s.log.Warn("runs: mark job dispatched", "job_id", j.ID, "err", err)
	}
	if err := s.dispatcher.Dispatch(ctx, toEngineJob(j), s.opts.CallbackBaseURL+s.callbackPath(j.Type)); err != nil {
		e := errcode.As(err)
		re := &engine.RunError{Code: string(errcode.ExternalService), Message: err.Error()}
		if e != nil {
			re.Code, re.Message = string(e.Code), e.Message()
		}
		if c := errcode.Code(re.Code); c == errcode.ExternalService || c == errcode.Unknown {
			// The job type's own code, as its engine's manifest promises (music: MUSIC_API_ERROR).
			re.Code = string(s.jobErrorCode(j.Type))
		}
		s.resolve(ctx, j.ID, engine.JobFailed, nil, re)
	}
}

// resolve resolves a job once and wakes its waiters; it reports false when it was resolved already.
func (s *Service) resolve(ctx context.Context, jobID, status string, result json.RawMessage, e *engine.RunError) (*store.Job, bool) {
	j, err := s.resolveErr(ctx, jobID, status, result, e)
	if err != nil && !errors.Is(err, store.ErrStale) {
		s.log.Warn("runs: resolve job", "job_id", jobID, "err", err)
	}
	return j, err == nil
}

// resolveErr is resolve answering why the job was not resolved: ErrStale when it was already,
// else the database's error, which the caller logs (the sweeper and PluginJobs once per step of
// their back-off).
func (s *Service) resolveErr(ctx context.Context, jobID, status string, result json.RawMessage, e *engine.RunError) (*store.Job, error) {
	return s.resolveWith(ctx, jobID, status, result, e, func(tx Store, errObj json.RawMessage) (*store.Job, error) {
		return tx.ResolveJob(ctx, store.ResolveJobParams{ID: jobID, Status: status, Result: result, Error: errObj})
	})
}

// expire times out a job still past its deadline at now (the sweeper's listing): false when it was
// resolved meanwhile, or its executor called back and moved the deadline (ExtendJob).
func (s *Service) expire(ctx context.Context, jobID string, now time.Time, e *engine.RunError) (*store.Job, error) {
	return s.resolveWith(ctx, jobID, engine.JobTimeout, nil, e, func(tx Store, errObj json.RawMessage) (*store.Job, error) {
		return tx.TimeOutJob(ctx, store.TimeOutJobParams{ID: jobID, Now: now, Error: errObj})
	})
}

// resolveWith is resolve's work with the store's guarded update end: the job's end events in the
// same transaction, the files of a completed job recorded, its waiters woken.
func (s *Service) resolveWith(ctx context.Context, jobID, status string, result json.RawMessage, e *engine.RunError,
	end func(tx Store, errObj json.RawMessage) (*store.Job, error)) (*store.Job, error) {
	var errObj json.RawMessage
	if e != nil {
		errObj, _ = json.Marshal(e) // a struct of strings and numbers: Marshal cannot fail
	}
	if status == engine.JobCompleted {
		s.recordJobFiles(ctx, jobID, result)
	}
	var j *store.Job
	err := store.InTx(ctx, s.st, func(tx Store) error {
		var err error
		if j, err = end(tx, errObj); err != nil {
			return err
		}
		return emitJobEnd(ctx, tx, j, e)
	})
	if err != nil {
		return nil, err
	}
	s.wakeJob(jobID)
	return j, nil
}

// recordJobFiles records the files a job's result names as assets of its run, before the job is
// resolved: whoever sees the job resolved may name its files at once, and must find them recorded.
// Waking this host's waiters after the recording is not enough: a waiter also reads the store
// every second (WaitJob), as does another host's, and a run's result drops the files it names that
// are not assets (content.LiveOutputs); recorded after the resolution, a file copied into an object
// store while a waiter's second came round went missing from a finished run's result. A job
// resolved meanwhile (timed out, or answered twice) keeps its first answer; its files are not
// recorded.
func (s *Service) recordJobFiles(ctx context.Context, jobID string, result json.RawMessage) {
	if s.assets == nil || len(result) == 0 {
		return
	}
	j, err := s.st.GetJob(ctx, jobID)
	if err != nil || j.Resolved() {
		return // the resolution below says why, or finds it resolved
	}
	if r, err := s.st.GetRun(ctx, j.RunID); err == nil {
		s.recordFiles(ctx, r, result)
	}
}

// emitJobEnd emits, in the transaction that resolved j, job.status.changed and the job's end:
// job.completed, or job.failed (failed or timed out, with the error). ResolveJob's guard makes it
// once per job.
func emitJobEnd(ctx context.Context, tx Store, j *store.Job, e *engine.RunError) error {
	if err := events.Emit(ctx, tx, jobEvent(ctx, tx, events.JobStatusChanged, j, e)); err != nil {
		return err
	}
	if j.Status == engine.JobCompleted {
		ev := jobEvent(ctx, tx, events.JobCompleted, j, nil)
		if len(j.Result) > 0 {
			ev.Data["result"] = j.Result
		}
		return events.Emit(ctx, tx, ev)
	}
	return events.Emit(ctx, tx, jobEvent(ctx, tx, events.JobFailed, j, e))
}

// jobEvent is an event about j, as an event of its run's owner and project (SPEC.md's job.completed
// example carries userId and projectId).
func jobEvent(ctx context.Context, tx Store, name string, j *store.Job, e *engine.RunError) events.Event {
	ev := events.Event{Name: name, Data: map[string]any{"jobId": j.ID, "runId": j.RunID, "type": j.Type, "status": j.Status}}
	if r, err := tx.GetRun(ctx, j.RunID); err == nil {
		ev.UserID, ev.ProjectID = r.UserID, r.ProjectID
		ev.Data["userId"] = r.UserID
		if r.ProjectID != "" {
			ev.Data["projectId"] = r.ProjectID
		}
	}
	if e != nil {
		ev.Data["error"] = e
	}
	return ev
}

func (s *Service) wakeJob(jobID string) {
	s.mu.Lock()
	ws := s.waiters[jobID]
	delete(s.waiters, jobID)
	s.mu.Unlock()
	for _, w := range ws {
		close(w)
	}
}

// WaitJob implements engine.Host: it blocks until the job is resolved or ctx ends.
func (s *Service) WaitJob(ctx context.Context, jobID string) (*engine.Job, error) {
	var reacquire func()
	for {
		ch := make(chan struct{})
		s.mu.Lock()
		s.waiters[jobID] = append(s.waiters[jobID], ch)
		s.mu.Unlock()
		j, err := s.st.GetJob(ctx, jobID)
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return nil, errcode.New(errcode.NotFound, "Job not found")
			}
			return nil, err
		}
		if j.Resolved() {
			return toEngineJob(j), nil
		}
		if j.Abandoned(s.st.Now()) {
			s.interrupt(ctx, j)
			continue
		}
		if reacquire == nil {
			// Awaiting a job computes nothing: the run's executor slot serves other runs meanwhile.
			reacquire = s.yieldSlot(ctx, j.RunID)
			defer reacquire()
		}
		t := time.NewTimer(time.Second) // callbacks handled by another host arrive through the store
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-ch:
		case <-t.C:
		}
		t.Stop()
	}
}

// Search implements engine.Host; without a knowledge base it finds nothing.
func (s *Service) Search(ctx context.Context, req *engine.SearchRequest) ([]engine.SearchHit, error) {
	if s.searcher == nil || req == nil {
		return []engine.SearchHit{}, nil
	}
	return s.searcher.Search(ctx, req)
}

// Generate implements engine.Host; without a language model it answers OK=false.
func (s *Service) Generate(ctx context.Context, req *engine.GenerateRequest) (*engine.GenerateResult, error) {
	if s.llm == nil || req == nil {
		return &engine.GenerateResult{OK: false}, nil
	}
	return s.llm.Generate(ctx, req)
}

// keepAnswer is how keepModelCall retries: every fifth of a second at most, because the
// database's return is a race with the executors' claims (which back off with backoff.Loops, up
// to half a minute) and the answer must be recorded before a re-execution asks for it; for a
// minute at most (a database down longer than that: the step asks the model again when its run
// is executed again).
var keepAnswer = struct {
	policy   backoff.Policy
	patience time.Duration
}{backoff.Policy{Min: 50 * time.Millisecond, Max: 200 * time.Millisecond}, time.Minute}

// keepModelCall records the model's answer to call key, retrying while the database fails, also
// after the execution lost its lease: the answer is a fact about the run whoever executes it, and
// a re-execution that finds it does not call the model again.
func (s *Service) keepModelCall(ctx context.Context, key store.ModelCallKey, res *engine.GenerateResult) {
	b, _ := json.Marshal(res) // strings and numbers: Marshal cannot fail
	ctx, cancel := context.WithTimeout(ctx, keepAnswer.patience)
	defer cancel()
	retry := backoff.Retry{Policy: keepAnswer.policy, Log: s.log, What: "runs: record a model answer"}
	for {
		err := s.st.PutModelCall(ctx, key, b)
		if err == nil {
			retry.Succeeded()
			return
		}
		if errors.Is(err, store.ErrNotFound) || !backoff.Sleep(ctx, retry.Failed(err, "run_id", key.RunID)) {
			s.log.Warn("runs: a model answer not recorded: a re-execution of the step asks again", "run_id", key.RunID, "err", err)
			return
		}
	}
}

func toEngineJob(j *store.Job) *engine.Job {
	out := &engine.Job{JobID: j.ID, RunID: j.RunID, Type: j.Type, Status: j.Status, Request: j.Request, Result: j.Result,
		RetryCount: j.RetryCount, MaxRetries: j.MaxRetries, CreatedAt: j.CreatedAt, TimeoutAt: j.TimeoutAt, ResolvedAt: j.ResolvedAt}
	if len(j.Error) > 0 {
		var e engine.RunError
		if json.Unmarshal(j.Error, &e) == nil {
			out.Error = &e
		}
	}
	return out
}

// sameJSON reports whether two JSON documents are equal once decoded.
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x) // decoded from JSON just above
	ya, _ := json.Marshal(y) // decoded from JSON just above
	return string(xa) == string(ya)
}
