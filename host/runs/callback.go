package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/internal/backoff"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// CallbackResult answers an inbound callback.
type CallbackResult struct {
	JobID     string `json:"job_id"`
	RunID     string `json:"run_id"`
	Status    string `json:"status"`
	Duplicate bool   `json:"duplicate,omitempty"`
}

// callbackBody holds the fields of the three callback bodies the host reads itself.
type callbackBody struct {
	JobID    string            `json:"job_id"`
	RunID    string            `json:"run_id"`
	Status   string            `json:"status"`
	Outputs  json.RawMessage   `json:"outputs"`
	Result   json.RawMessage   `json:"result"`
	Error    json.RawMessage   `json:"error"`
	Trace    []json.RawMessage `json:"trace"`
	Metadata map[string]any    `json:"metadata"`
}

// Callback applies a verified inbound callback (the signature was checked by the caller): it
// resolves the job once (a repeat answers Duplicate), hands an engine job's payload to the run's
// engine, and stores what the run came to. A progress callback (running, pending, accepted) moves
// the job's deadline by its type's timeout: a job times out only after a silence longer than that.
// Unknown job: 404 NOT_FOUND. A job that timed out: 410 WORKFLOW_TIMEOUT (jobGone), so that its
// executor stops the work the host gave up on (another attempt may be under way).
func (s *Service) Callback(ctx context.Context, kind string, raw []byte) (*CallbackResult, error) {
	var b callbackBody
	if err := json.Unmarshal(raw, &b); err != nil {
		return nil, errcode.New(errcode.Validation, "Malformed JSON body")
	}
	if b.JobID == "" {
		return nil, errcode.Invalid("job_id", "is required")
	}
	j, err := s.st.GetJob(ctx, b.JobID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errcode.New(errcode.NotFound, "Job not found")
	}
	if err != nil {
		return nil, fmt.Errorf("runs: load job: %w", err)
	}
	dup := &CallbackResult{JobID: j.ID, RunID: j.RunID, Status: j.Status, Duplicate: true}
	if j.Status == engine.JobTimeout {
		return nil, jobGone(j)
	}
	if j.Resolved() {
		return dup, nil
	}
	if b.Status == "running" || b.Status == "pending" || b.Status == "accepted" {
		// Progress only: the job stays open, its deadline moved; the engine may record steps
		// and progress.
		if p, _, ok := s.policy(j.Type); ok && p.Timeout > 0 {
			if _, err := s.st.ExtendJob(ctx, j.ID, s.st.Now().Add(p.Timeout)); errors.Is(err, store.ErrStale) {
				// Resolved since it was read: timed out (the sweeper won), or done.
				if cur, gerr := s.st.GetJob(ctx, j.ID); gerr == nil {
					if cur.Status == engine.JobTimeout {
						return nil, jobGone(cur)
					}
					dup.Status = cur.Status
				}
				return dup, nil
			} else if err != nil {
				return nil, fmt.Errorf("runs: extend job: %w", err)
			}
		}
		if s.takesCallbacks(j.Type) && kind != engine.CallbackAI {
			res := s.engineCallback(ctx, kind, j, raw, &b)
			if res != nil && res.Status != engine.StatusCompleted {
				s.apply(context.WithoutCancel(ctx), j.RunID, "", res)
			}
		}
		return &CallbackResult{JobID: j.ID, RunID: j.RunID, Status: j.Status}, nil
	}
	status := engine.JobCompleted
	var jerr *engine.RunError
	switch b.Status {
	case "failed", "error", "timeout":
		status = engine.JobFailed
		jerr = &engine.RunError{Code: string(s.jobErrorCode(j.Type)), Message: "the external executor reported failure"}
		var e engine.RunError
		if len(b.Error) > 0 && json.Unmarshal(b.Error, &e) == nil && e.Message != "" {
			jerr.Message = e.Message
			if errcode.Known(errcode.Code(e.Code)) {
				jerr.Code = e.Code
			}
		} else if s := string(b.Error); len(b.Error) > 0 && s != "null" {
			var msg string
			if json.Unmarshal(b.Error, &msg) == nil && msg != "" {
				jerr.Message = msg
			}
		}
	}
	result := b.Result
	if len(result) == 0 {
		result = b.Outputs
	}
	if len(result) == 0 {
		result = raw
	}
	resolved, ok := s.resolve(ctx, j.ID, status, result, jerr)
	if !ok {
		if cur, err := s.st.GetJob(ctx, j.ID); err == nil {
			if cur.Status == engine.JobTimeout {
				return nil, jobGone(cur)
			}
			dup.Status = cur.Status
		}
		return dup, nil
	}
	out := &CallbackResult{JobID: j.ID, RunID: j.RunID, Status: resolved.Status}
	if !s.takesCallbacks(j.Type) || kind == engine.CallbackAI {
		return out, nil // the step awaiting it (WaitJob) takes it from here
	}
	res := s.engineCallback(ctx, kind, resolved, raw, &b)
	s.apply(context.WithoutCancel(ctx), j.RunID, "", res)
	if r, err := s.st.GetRun(ctx, j.RunID); err == nil {
		out.Status = r.Status
	}
	return out, nil
}

// jobGone answers a callback for job j that timed out: 410 Gone, so that its executor stops (the
// host gave up on the job; the run went on without it, with a new job when retries were left).
func jobGone(j *store.Job) error {
	return errcode.Newf(errcode.WorkflowTimeout, "job %s timed out: stop its work (the run goes on without it)", j.ID).
		WithStatus(http.StatusGone)
}

// engineCallback asks the engine of the job's type what the callback means for the run: its live
// plugin, else its in-process engine, else the host reads the SPEC.md fields itself.
func (s *Service) engineCallback(ctx context.Context, kind string, j *store.Job, raw []byte, b *callbackBody) *engine.RunResult {
	name := s.jobEngine(j.Type)
	if eng := s.route(name).eng; eng != nil {
		h := &runHost{s: s, engine: name, runID: j.RunID}
		if r, err := s.st.GetRun(ctx, j.RunID); err == nil {
			h = s.hostFor(name, r)
		}
		res, err := eng.Callback(ctx, h, &engine.CallbackRequest{RunID: j.RunID, Job: *toEngineJob(j), Kind: kind, Payload: raw})
		if err == nil && res != nil {
			return res
		}
		if err != nil {
			s.log.Warn("runs: engine callback", "run_id", j.RunID, "job_id", j.ID, "err", err)
			e := errcode.As(err)
			if e == nil || e.Code != errcode.WorkflowInvalidState {
				code, msg := string(errcode.Of(err)), err.Error()
				if e != nil {
					msg = e.Message()
				}
				return &engine.RunResult{Status: engine.StatusFailed, Error: &engine.RunError{Code: code, Message: msg}}
			}
		}
	}
	return s.genericCallback(ctx, j, b)
}

// genericCallback reads a callback by the SPEC.md fields: status, outputs or result, trace and
// metadata (tokens and cost land on the trace).
func (s *Service) genericCallback(ctx context.Context, j *store.Job, b *callbackBody) *engine.RunResult {
	for i, raw := range b.Trace {
		var ts engine.TraceStep
		if json.Unmarshal(raw, &ts) != nil || ts.StepID == "" {
			continue
		}
		if ts.Agent == "" {
			ts.Agent = j.Type
		}
		if ts.Status == "" {
			ts.Status = engine.StepCompleted
		}
		if ts.Engine == "" {
			ts.Engine = j.Type
		}
		if i == len(b.Trace)-1 && b.Metadata != nil {
			if v, ok := b.Metadata["total_tokens"].(float64); ok && ts.TokensUsed == nil {
				n := int64(v)
				ts.TokensUsed = &n
			}
			if v, ok := b.Metadata["total_cost_usd"].(float64); ok && ts.CostUSD == nil {
				ts.CostUSD = &v
			}
		}
		if err := s.ReportStep(ctx, j.RunID, ts); err != nil {
			// The run's outcome stands without this step in its trace.
			s.log.Warn("runs: a callback's trace step not stored", "run_id", j.RunID, "step_id", ts.StepID, "err", err)
		}
	}
	switch b.Status {
	case "failed", "error", "timeout":
		var e engine.RunError
		if len(b.Error) > 0 && json.Unmarshal(b.Error, &e) == nil && e.Message != "" {
			if !errcode.Known(errcode.Code(e.Code)) {
				e.Code = string(s.jobErrorCode(j.Type))
			}
			return &engine.RunResult{Status: engine.StatusFailed, Error: &e}
		}
		return &engine.RunResult{Status: engine.StatusFailed, Error: &engine.RunError{Code: string(s.jobErrorCode(j.Type)),
			Message: fmt.Sprintf("the %s executor reported failure", j.Type)}}
	case "paused":
		out := map[string]any{}
		_ = json.Unmarshal(b.Outputs, &out) // outputs are optional here: without a prompt, the default asks
		prompt, _ := out["prompt"].(string)
		if prompt == "" {
			prompt = "Input needed"
		}
		step := j.StepID
		if step == "" {
			step = j.Type
		}
		return &engine.RunResult{Status: engine.StatusPaused, Awaiting: &engine.Awaiting{StepID: step, Prompt: prompt}}
	}
	out := map[string]any{}
	src := b.Outputs
	if len(src) == 0 {
		src = b.Result
	}
	if len(src) > 0 {
		var v any
		if json.Unmarshal(src, &v) == nil {
			if m, ok := v.(map[string]any); ok {
				out = m
			} else {
				out["result"] = v
			}
		}
	}
	if b.Metadata != nil {
		out["metadata"] = b.Metadata
	}
	return &engine.RunResult{Status: engine.StatusCompleted, Outputs: out}
}

// jobErrorCode is the code of a job of type typ that failed at its executor (its policy's).
func (s *Service) jobErrorCode(typ string) errcode.Code {
	if p, _, ok := s.policy(typ); ok && p.ErrorCode != "" {
		return p.ErrorCode
	}
	return errcode.ExternalService
}

// jobEngine is the name of the engine whose registry entry declares job type typ (typ itself when
// none does: engines name their jobs after themselves).
func (s *Service) jobEngine(typ string) string {
	if _, e, ok := s.Manifests().Job(typ); ok {
		return e.Name
	}
	return typ
}

// takesCallbacks reports whether the callbacks of job type typ go to its engine's Callback (its
// entry's callback kind is graph or automation); otherwise the step awaiting the job goes on.
func (s *Service) takesCallbacks(typ string) bool {
	_, e, ok := s.Manifests().Job(typ)
	return ok && e.TakesCallbacks()
}

// StartSweeper starts the job sweeper: jobs past timeout_at are retried with their type's back-off
// while retries are left, else timed out (their run fails with WORKFLOW_TIMEOUT). It sweeps only
// while Leader says this host leads; each change is also one guarded UPDATE.
func (s *Service) StartSweeper(ctx context.Context) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l := &lifecycle{cancel: cancel}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		retry := backoff.Retry{Log: s.log, What: "runs: job sweeper"}
		for backoff.Sleep(ctx, s.opts.SweepInterval) {
			// The database failing: the back-off before the next sweep, not the interval.
			for err := s.sweepOnce(ctx); err != nil && ctx.Err() == nil; err = s.sweepOnce(ctx) {
				if !backoff.Sleep(ctx, retry.Failed(err)) {
					return
				}
			}
			retry.Succeeded()
		}
	}()
	s.mu.Lock()
	s.sweep = l
	s.mu.Unlock()
}

// StopSweeper stops the sweeper and waits for it.
func (s *Service) StopSweeper() {
	s.mu.Lock()
	l := s.sweep
	s.sweep = nil
	s.mu.Unlock()
	l.stop()
}

// Sweep handles the jobs due now once.
func (s *Service) Sweep(ctx context.Context) {
	if err := s.sweepOnce(ctx); err != nil && ctx.Err() == nil {
		s.log.Warn("runs: job sweeper", "err", err)
	}
}

// sweepOnce is Sweep; it answers the error of a listing that failed (the database failing), for the
// sweeper's back-off.
func (s *Service) sweepOnce(ctx context.Context) error {
	if s.leader != nil && !s.leader(ctx) {
		return nil
	}
	now := s.st.Now()
	due, err := s.st.ListDueJobs(ctx, now, 100)
	if err != nil {
		return fmt.Errorf("list due jobs: %w", err)
	}
	for i := range due {
		if err := s.timeoutJob(ctx, &due[i], now); err != nil {
			return err
		}
	}
	// Jobs whose host stopped renewing their lease died with it: no callback will come.
	if err := s.interruptAbandoned(ctx); err != nil {
		return err
	}
	// Runs nothing drives (an update lost to a database error, or an engine that waits for no job)
	// are handed to the executor again as a recovery: after maxRecoveries they fail.
	// Each is claimed by the same test it was listed by: one handed back and claimed by a host since
	// the listing is left to that host.
	before := now.Add(-s.opts.OrphanAfter)
	orphans, err := s.st.ListOrphanRuns(ctx, before, 100)
	if err != nil {
		return fmt.Errorf("list orphan runs: %w", err)
	}
	for _, id := range orphans {
		if _, err := s.st.ClaimOrphanRun(ctx, store.ClaimOrphanRunParams{ID: id, Before: before, Holder: "orphan"}); err == nil {
			s.log.Warn("runs: a running run had nothing driving it: executing it again", "run_id", id)
			s.kick()
		}
	}
	return nil
}

// It answers the database's error, for the sweeper's back-off.
func (s *Service) timeoutJob(ctx context.Context, j *store.Job, now time.Time) error {
	p, _, _ := s.policy(j.Type)
	if j.RetryCount < j.MaxRetries && engine.IsGeneratorJob(j.Type) && s.dispatcher != nil {
		next := now.Add(p.BackoffFor(j.RetryCount+1) + p.Timeout)
		rj, err := s.st.RetryJob(ctx, j.ID, next)
		if errors.Is(err, store.ErrStale) || errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("retry job %s: %w", j.ID, err)
		}
		go func() {
			time.Sleep(p.BackoffFor(rj.RetryCount))
			s.dispatch(context.WithoutCancel(ctx), rj)
		}()
		return nil
	}
	msg := fmt.Sprintf("%s job %s got no callback within %s", j.Type, j.ID, p.Timeout)
	if _, err := s.expire(ctx, j.ID, now, &engine.RunError{Code: string(errcode.WorkflowTimeout), Message: msg}); err != nil {
		if errors.Is(err, store.ErrStale) {
			return nil // resolved meanwhile, or its executor called back in time
		}
		return err
	}
	if engine.IsGeneratorJob(j.Type) {
		return nil // the step awaiting it decides (an optional step is skipped)
	}
	// An engine job's executor was silent for longer than the timeout: ask its engine to stop that
	// job before anything else is posted (its next callback answers 410 either way).
	s.cancelJob(ctx, j)
	if j.RetryCount < j.MaxRetries {
		// An engine job: execute the run again after the back-off; the engine makes a new job,
		// which carries the retry count on.
		at := now.Add(p.BackoffFor(j.RetryCount + 1))
		_, err := s.st.UpdateRun(ctx, j.RunID, store.RunUpdate{From: []string{store.RunRunning}, Status: store.RunRunning, Lease: &at, Unclaim: true})
		if err != nil {
			s.log.Warn("runs: hand a timed-out run back for a retry", "run_id", j.RunID, "err", err)
		}
		if err == nil {
			go func() {
				time.Sleep(time.Until(at) + 10*time.Millisecond)
				s.kick()
			}()
		}
		return nil
	}
	s.fail(ctx, j.RunID, "", &engine.RunError{Code: string(errcode.WorkflowTimeout), Message: msg, StepID: j.StepID})
	return nil
}

// cancelJob asks the engine of job j's type to stop that job's outside work (Cancel with its id),
// best effort: a timed-out job's executor may be gone.
func (s *Service) cancelJob(ctx context.Context, j *store.Job) {
	eng := s.route(s.jobEngine(j.Type)).eng
	if eng == nil {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := eng.Cancel(cctx, &engine.CancelRequest{RunID: j.RunID, JobIDs: []string{j.ID}}); err != nil {
		s.log.Warn("runs: cancel a timed-out job", "run_id", j.RunID, "job_id", j.ID, "err", err)
	}
}

// CompleteJob resolves a job with the answer of the plugin that did it (PluginJobs), as if its
// ai-callback had arrived: result on success, else failure. A catalogue error says the job is gone
// or resolved already; any other is the database's, and the answer may be tried again.
func (s *Service) CompleteJob(ctx context.Context, jobID string, result json.RawMessage, failure *engine.RunError) error {
	status := engine.JobCompleted
	if failure != nil {
		status, result = engine.JobFailed, nil
	}
	if _, err := s.resolveErr(ctx, jobID, status, result, failure); err != nil {
		if !errors.Is(err, store.ErrStale) && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if _, err := s.st.GetJob(ctx, jobID); errors.Is(err, store.ErrNotFound) {
			return errcode.New(errcode.NotFound, "Job not found")
		}
		return errcode.New(errcode.WorkflowInvalidState, "the job was resolved already")
	}
	return nil
}

// RunOwner names the owner of a run: the user a PluginJobs Run carries to the plugin doing the job.
func (s *Service) RunOwner(ctx context.Context, runID string) (engine.UserContext, error) {
	r, err := s.st.GetRun(ctx, runID)
	if err != nil {
		return engine.UserContext{}, err
	}
	var uc engine.UserContext
	_ = json.Unmarshal(r.UserContext, &uc) // Start wrote it from a UserContext; the user's row below fills what it lacks
	uc.UserID = r.UserID
	if u, err := s.st.GetUser(ctx, r.UserID); err == nil {
		uc.Role, uc.Username = u.Role, u.Username
	}
	return uc, nil
}
