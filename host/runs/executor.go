package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/manifest"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/internal/backoff"
	"github.com/reelforge/reelforge/internal/lease"
	"github.com/reelforge/reelforge/internal/tick"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// maxRecoveries is how many times a run is taken over from a host that died while running it
// before it is failed: a run that crashes its host every time must not loop forever.
const maxRecoveries = 3

// lifecycle is a group of goroutines started and stopped together.
type lifecycle struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// stopClaims and runs serve the executor: it stops claiming before it stops the executions,
	// which it counts apart (runs) so that a drain can wait for them alone.
	stopClaims context.CancelFunc
	runs       sync.WaitGroup
}

// executions is closed once no execution is in flight.
func (l *lifecycle) executions() <-chan struct{} {
	done := make(chan struct{})
	go func() {
		l.runs.Wait()
		close(done)
	}()
	return done
}

func (l *lifecycle) stop() {
	if l == nil {
		return
	}
	l.cancel()
	l.wg.Wait()
}

// maxWaitingPerSlot bounds the runs this host holds at once to this many per executor slot: a
// run awaiting a job holds no slot, but its goroutine and lease still cost something.
const maxWaitingPerSlot = 8

// StartExecutor takes back the work of this host's previous life (see TakeBack), then starts the
// loop that claims and executes runs and the renewal of the leases of the jobs this host works on,
// until StopExecutor.
func (s *Service) StartExecutor(ctx context.Context) {
	s.TakeBack(ctx)
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	claimCtx, stopClaims := context.WithCancel(ctx)
	l := &lifecycle{cancel: cancel, stopClaims: stopClaims}
	l.wg.Add(2)
	go func() {
		defer l.wg.Done()
		s.work(claimCtx, ctx, l)
	}()
	go func() {
		defer l.wg.Done()
		s.holdJobs(ctx)
	}()
	s.mu.Lock()
	s.exec = l
	s.mu.Unlock()
	s.kick()
}

// StopExecutor stops claiming runs and stops the executions in flight at once; each hands its run
// back (lease ended, claim cleared), so the next executor (this host after a restart, or another)
// takes it up at once.
func (s *Service) StopExecutor() { s.DrainExecutor(0) }

// DrainExecutor stops claiming runs, lets the executions in flight finish for up to grace, then
// stops those left, which hand their runs back as StopExecutor's do.
func (s *Service) DrainExecutor(grace time.Duration) {
	s.mu.Lock()
	l := s.exec
	s.exec = nil
	s.mu.Unlock()
	if l == nil {
		return
	}
	l.stopClaims()
	if grace > 0 {
		t := time.NewTimer(grace)
		select {
		case <-l.executions():
		case <-t.C:
		}
		t.Stop()
	}
	l.stop()
}

// TakeBack hands the work this host's previous life left back at once, without waiting for its
// leases to run out: the runs its executors had claimed are claimable again (a recovery: their
// completed steps are kept), and the jobs it was working on itself are resolved as interrupted.
// An external job that may still call back is left to its callback or its time-out.
func (s *Service) TakeBack(ctx context.Context) {
	n, err := s.st.TakeBackRuns(ctx, s.opts.HostID)
	if err != nil {
		s.log.Warn("runs: take back the runs of this host's previous life", "host_id", s.opts.HostID, "err", err)
	}
	m, err := s.st.TakeBackJobs(ctx, s.opts.HostID)
	if err != nil {
		s.log.Warn("runs: take back the jobs of this host's previous life", "host_id", s.opts.HostID, "err", err)
	}
	if n > 0 || m > 0 {
		s.log.Warn("runs: taking back the work of this host's previous life", "host_id", s.opts.HostID, "runs", n, "jobs", m)
	}
	if err := s.interruptAbandoned(ctx); err != nil && ctx.Err() == nil {
		s.log.Warn("runs: interrupt the jobs whose host stopped", "err", err)
	}
}

// holdJobs renews the leases of the jobs this host's life works on, until ctx ends.
func (s *Service) holdJobs(ctx context.Context) {
	retry := backoff.Retry{Log: s.log, What: "runs: renew job leases"}
	lease.Keep(ctx, s.opts.Lease, func(ctx context.Context) bool {
		if _, err := s.st.RenewJobLeases(ctx, s.life, s.opts.Lease); err != nil && ctx.Err() == nil {
			retry.Failed(err)
		} else if err == nil {
			retry.Succeeded()
		}
		return true // a failed renewal is tried again at the next tick, before the lease runs out
	})
}

// interruptAbandoned resolves the jobs whose holder stopped renewing: their work died with it.
// It answers the database's first error, so that the sweeper backs off instead of trying the same
// jobs again at every sweep.
func (s *Service) interruptAbandoned(ctx context.Context) error {
	jobs, err := s.st.ListAbandonedJobs(ctx, s.st.Now(), 100)
	if err != nil {
		return fmt.Errorf("list abandoned jobs: %w", err)
	}
	for i := range jobs {
		if err := s.interrupt(ctx, &jobs[i]); err != nil {
			return err
		}
	}
	return nil
}

// interrupt fails an abandoned job with the reason; the step awaiting it, or the step executed
// again when its run is taken over, orders the work anew. It answers the database's error (nil
// when the job was resolved already).
func (s *Service) interrupt(ctx context.Context, j *store.Job) error {
	msg := fmt.Sprintf("interrupted: the host doing this %s job (%s) stopped before it finished", j.Type, hostOf(j.HeldBy))
	_, err := s.resolveErr(ctx, j.ID, engine.JobFailed, nil, &engine.RunError{Code: string(s.jobErrorCode(j.Type)),
		Message: msg, StepID: j.StepID})
	if err == nil {
		s.log.Warn("runs: job interrupted by the stop of its host", "job_id", j.ID, "run_id", j.RunID, "holder", j.HeldBy)
	}
	if errors.Is(err, store.ErrStale) {
		return nil
	}
	return err
}

// hostOf is the host id of a claim or hold named host/<claim>.
func hostOf(holder string) string {
	if i := strings.LastIndexByte(holder, '/'); i > 0 {
		return holder[:i]
	}
	return holder
}

// execution is a run executing on this host: its cancel, and whether it holds an executor slot.
type execution struct {
	cancel  context.CancelFunc
	slots   chan struct{}
	mu      sync.Mutex // held while the slot is taken back
	holds   bool
	waiting int
	// ended: the execution returned (done). A WaitJob of its run that returns later (a plugin's
	// Host call whose handler outlives the plugin's Run, the plugin killed under it) must not
	// take a slot: nothing would give it back, and the executor would claim one run fewer for
	// the rest of the host's life.
	ended bool
}

// yield gives the slot back while the run awaits a job; the returned func takes one again (or
// gives up when ctx ends: the run is being stopped and computes nothing more).
func (e *execution) yield(ctx context.Context) func() {
	e.mu.Lock()
	e.waiting++
	if e.holds {
		<-e.slots
		e.holds = false
	}
	e.mu.Unlock()
	return func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.waiting--
		if e.holds || e.ended || ctx.Err() != nil {
			return
		}
		select {
		case e.slots <- struct{}{}:
			e.holds = true
		case <-ctx.Done():
		}
	}
}

// done gives back the slot when the execution holds one.
func (e *execution) done() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ended = true
	if e.holds {
		<-e.slots
		e.holds = false
	}
}

// yieldSlot gives the slot of run runID's execution here back while it awaits a job.
func (s *Service) yieldSlot(ctx context.Context, runID string) func() {
	s.mu.Lock()
	ex := s.active[runID]
	s.mu.Unlock()
	if ex == nil {
		return func() {}
	}
	return ex.yield(ctx)
}

// work claims runs while a slot is free (until ctx ends) and executes each in its own goroutine
// (counted in l) under execCtx.
func (s *Service) work(ctx, execCtx context.Context, l *lifecycle) {
	t := tick.NewTicker(s.opts.Poll) // out of phase with the host's other loops
	defer t.Stop()
	retry := backoff.Retry{Log: s.log, What: "runs: claim"}
	for ctx.Err() == nil {
		select {
		case s.admit <- struct{}{}:
		case <-ctx.Done():
			return
		}
		select {
		case s.slots <- struct{}{}:
		case <-ctx.Done():
			<-s.admit
			return
		}
		// Each claim has its own holder id, so a late update of an earlier execution of the same run
		// on this host cannot pass the guard of a later one: the id is the claim's fencing token.
		owner := s.opts.HostID + "/" + uuid.NewString()[:8]
		sent := time.Now()
		r, err := s.st.ClaimRun(ctx, owner, s.opts.Lease)
		if err == nil && time.Since(sent) >= lease.Safe(s.opts.Lease) {
			// The database answered so late that the lease it set may have run out already
			// (PostgreSQL paused under the statement): another executor may have the run by now.
			// Dropped, not executed; its lease runs out and it is claimed again (a recovery).
			// Said every time, not rationed with the claim's failures: it is the fencing at work.
			err = fmt.Errorf("run %s claimed %s after asking, past its lease's safe end: dropped", r.ID, time.Since(sent).Round(time.Millisecond))
			s.log.Warn("runs: a claim landed late", "run_id", r.ID, "err", err)
		}
		if err == nil {
			retry.Succeeded()
			ex := &execution{slots: s.slots, holds: true}
			l.wg.Add(1)
			l.runs.Add(1)
			go func() {
				defer l.wg.Done()
				defer l.runs.Done()
				defer func() { <-s.admit }()
				defer ex.done()
				s.execute(execCtx, r, owner, sent, ex)
			}()
			continue
		}
		<-s.slots
		<-s.admit
		if errors.Is(err, store.ErrNotFound) || ctx.Err() != nil {
			retry.Succeeded()
			select {
			case <-ctx.Done():
			case <-s.wake:
			case <-t.C:
			}
			continue
		}
		// A database that fails (down, full disk): wait out the back-off, unless a run is stored
		// meanwhile. A kick comes only after a write committed (a run started, resumed or
		// retried), so the database takes writes again: claim at once rather than keep the run
		// waiting up to half a minute. While the database fails nothing commits, so nothing
		// wakes the loop early.
		wait := time.NewTimer(retry.Failed(err))
		select {
		case <-ctx.Done():
		case <-s.wake:
		case <-wait.C:
		}
		wait.Stop()
	}
}

// choice is an engine picked to serve a run or a call: the engine (nil when none can), the name
// it serves under, and why it is not the one asked for ("" when it is).
type choice struct {
	eng      engine.Engine
	name     string
	degraded string
}

// route picks the engine for engine name: the live plugin, else the in-process engine of that name
// when the plugins are off, else nil. It says why it degraded when the plugin is not live.
func (s *Service) route(name string) choice {
	if s.plugins != nil {
		e, err := s.plugins.Engine(name)
		if err == nil {
			return choice{eng: e, name: name}
		}
		if ip := s.inProcess[name]; ip != nil {
			return choice{eng: ip, name: name, degraded: fmt.Sprintf("engine %s plugin unavailable: in process", name)}
		}
		return choice{name: name, degraded: fmt.Sprintf("engine %s plugin unavailable", name)}
	}
	if ip := s.inProcess[name]; ip != nil {
		return choice{eng: ip, name: name}
	}
	return choice{name: name, degraded: "plugins are switched off (PLUGINS_ENABLED=false)"}
}

// runEngine picks the engine that executes a run of manifest engine name: the live plugin, else
// the in-process node engine with the manifest's steps.
func (s *Service) runEngine(name string) choice {
	node := func(why string) choice {
		return choice{eng: s.inProcess[manifest.EngineNode], name: manifest.EngineNode, degraded: why}
	}
	if e, ok := s.Manifests().Engine(name); ok && !e.Enabled && name != manifest.EngineNode {
		return node(fmt.Sprintf("engine %s is disabled (%s: enabled: false): runs on the in-process node engine", name, e.File))
	}
	if s.plugins != nil {
		e, err := s.plugins.Engine(name)
		if err == nil {
			return choice{eng: e, name: name}
		}
		if name == manifest.EngineNode {
			return node("node plugin unavailable: in-process node engine")
		}
		why := err.Error()
		if ce := errcode.As(err); ce != nil {
			why = ce.Message()
		}
		return node(fmt.Sprintf("engine %s unavailable (%s): degraded to the in-process node engine", name, why))
	}
	if name == manifest.EngineNode {
		return node("")
	}
	return node(fmt.Sprintf("plugins are off (PLUGINS_ENABLED=false): engine %s runs on the in-process node engine", name))
}

// execute runs a claimed run on its engine and stores the outcome. owner is the claim (its
// fencing token), made by a statement sent at since.
func (s *Service) execute(ctx context.Context, r *store.Run, owner string, since time.Time, ex *execution) {
	m, ok := s.Manifests().Get(r.WorkflowID)
	if !ok {
		s.fail(ctx, r.ID, owner, &engine.RunError{Code: string(errcode.WorkflowNotFound),
			Message: fmt.Sprintf("workflow %q is no longer in the registry", r.WorkflowID)})
		return
	}
	if r.Recoveries > maxRecoveries {
		e := &engine.RunError{Code: string(errcode.WorkflowStepFailed), StepID: "recovery", Message: fmt.Sprintf(
			"the run was taken over %d times (its host stopped, or nothing was driving it); giving up", r.Recoveries)}
		now := s.st.Now()
		if err := s.reportStep(ctx, r.ID, owner, engine.TraceStep{StepID: "recovery", StepName: "recovery", Agent: "host",
			Status: engine.StepFailed, StartedAt: &now, CompletedAt: &now, Error: &engine.StepError{Code: e.Code, Message: e.Message}}); err != nil {
			// The run fails below all the same; its error says why.
			s.log.Warn("runs: the recovery step not stored", "run_id", r.ID, "err", err)
		}
		s.fail(ctx, r.ID, owner, e)
		return
	}
	if r.Recoveries > 0 && r.Status == store.RunRunning {
		s.log.Warn("runs: taking over a run whose host stopped", "run_id", r.ID, "recoveries", r.Recoveries)
	}
	wf := m.Workflow()
	picked := s.runEngine(m.Engine)
	eng, name, degraded := picked.eng, picked.name, picked.degraded
	deg := degraded
	started, err := s.st.UpdateRun(ctx, r.ID, store.RunUpdate{From: []string{store.RunPending, store.RunRunning},
		Status: store.RunRunning, Owner: owner, Started: true, Engine: name, Degraded: &deg})
	if err != nil {
		if !errors.Is(err, store.ErrStale) {
			s.log.Warn("runs: start run", "run_id", r.ID, "err", err)
		}
		return
	}
	if r.Status == store.RunPending {
		s.notifyStatus(ctx, started)
	}
	r = started

	// cancel (Cancel, the lease keeper below) ends the run's work; the workflow's time-out is a
	// child of it, so cancel reaches the work either way and both are released here. The lease
	// keeper gives errClaimLost as the cause: a model call in flight then goes on a little
	// (runHost.callContext).
	runCtx, cancelCause := context.WithCancelCause(ctx)
	cancel := func() { cancelCause(nil) }
	defer cancel()
	if wf.Timeout > 0 {
		var stopTimer context.CancelFunc
		runCtx, stopTimer = context.WithTimeout(runCtx, wf.Timeout)
		defer stopTimer()
	}
	ex.cancel = cancel
	s.mu.Lock()
	s.active[r.ID] = ex
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.active, r.ID)
		s.mu.Unlock()
	}()
	// Keep the lease while the engine works, also while the host stops (the run is handed back).
	// When it is lost (the run cancelled or taken over) or renewals failed for a whole lease, the
	// run's work stops before another executor may start it.
	leaseCtx, stopLease := context.WithCancel(context.WithoutCancel(ctx))
	defer stopLease()
	var expired atomic.Bool
	go func() {
		retry := backoff.Retry{Log: s.log, What: "runs: renew run lease"}
		err := lease.Hold(leaseCtx, s.opts.Lease, since, func(lctx context.Context) (bool, error) {
			err := s.st.RenewLease(lctx, store.RunLeaseParams{ID: r.ID, Owner: owner, Lease: s.opts.Lease})
			if errors.Is(err, store.ErrStale) {
				return false, err // cancelled, or taken by another host
			}
			if err != nil {
				retry.Failed(err, "run_id", r.ID) // tried again at the next tick, while the lease lasts
			} else {
				retry.Succeeded()
			}
			return true, err
		})
		if err == nil {
			return
		}
		if !errors.Is(err, store.ErrStale) {
			expired.Store(true)
			s.log.Warn("runs: the run's lease could not be renewed: stopping its work before another host takes it",
				"run_id", r.ID, "owner", owner, "err", err)
		}
		cancelCause(fmt.Errorf("%w: %w", errClaimLost, err))
	}()
	h := s.hostFor(name, r)
	h.owner, h.live, h.stopping = owner, runCtx, ctx

	req, err := s.runRequest(ctx, r, wf, degraded)
	if err != nil {
		s.fail(ctx, r.ID, owner, &engine.RunError{Code: string(errcode.Unknown), Message: "could not prepare the run"})
		s.log.Error("runs: prepare", "run_id", r.ID, "err", err)
		return
	}
	if eng == nil {
		s.fail(ctx, r.ID, owner, &engine.RunError{Code: string(errcode.ExternalService), Message: "no engine can run this workflow"})
		return
	}
	res, err := eng.Run(runCtx, h, req)
	if err != nil && degraded == "" && s.outage(m.Engine, err) && (name != "node" || s.plugins != nil) &&
		ctx.Err() == nil && runCtx.Err() == nil {
		// The plugin died during the run, or the engine's external tool is down: finish the run on
		// the in-process node engine, from the steps it completed.
		reason := fmt.Sprintf("engine %s failed (%s): degraded to the in-process node engine", m.Engine, errcode.As(err).Message())
		s.log.Warn("runs: engine failed, degrading", "run_id", r.ID, "err", err)
		s.failJobs(ctx, jobFailure{RunID: r.ID, Owner: owner, Err: &engine.RunError{Code: string(errcode.Of(err)),
			Message: "the run degraded to the node engine"}})
		if req2, rerr := s.runRequest(ctx, r, wf, reason); rerr == nil {
			if _, err := s.st.UpdateRun(ctx, r.ID, store.RunUpdate{From: []string{store.RunRunning}, Status: store.RunRunning,
				Owner: owner, Engine: "node", Degraded: &reason}); err != nil {
				// Only the run's record of its engine is behind: the trace names the engine of each step.
				s.log.Warn("runs: record the degradation", "run_id", r.ID, "err", err)
			}
			h2 := s.hostFor("node", r)
			h2.owner, h2.live, h2.stopping = owner, runCtx, ctx
			res, err = s.inProcess["node"].Run(runCtx, h2, req2)
		}
	}
	if ctx.Err() != nil || expired.Load() {
		// The host is stopping, or the lease ran out: hand the run back with an expired lease
		// for the next executor (when the lease ran out, another may have it already: the guard
		// on the owner then leaves it alone).
		now := s.st.Now()
		if _, err := s.st.UpdateRun(context.WithoutCancel(ctx), r.ID, store.RunUpdate{From: []string{store.RunRunning}, Status: store.RunRunning,
			Owner: owner, Lease: &now, Unclaim: true}); err != nil && !errors.Is(err, store.ErrStale) {
			// Not handed back: its lease runs out and the next executor takes it then (a recovery).
			s.log.Warn("runs: hand the run back at stop", "run_id", r.ID, "err", err)
		}
		return
	}
	if err != nil {
		code := errcode.Of(err)
		msg := err.Error()
		if e := errcode.As(err); e != nil {
			msg = e.Message()
		}
		if errors.Is(runCtx.Err(), context.DeadlineExceeded) {
			code, msg = errcode.WorkflowTimeout, fmt.Sprintf("the workflow did not finish within %s", wf.Timeout)
		}
		res = &engine.RunResult{Status: engine.StatusFailed, Error: &engine.RunError{Code: string(code), Message: msg}}
	}
	s.apply(context.WithoutCancel(ctx), r.ID, owner, res)
}

// runRequest builds the engine request of r: inputs, contexts, completed steps, resume input.
func (s *Service) runRequest(ctx context.Context, r *store.Run, wf engine.Workflow, degraded string) (*engine.RunRequest, error) {
	req := &engine.RunRequest{RunID: r.ID, Workflow: wf, Inputs: map[string]any{}, Attempt: r.Attempt,
		CallbackURL: s.opts.CallbackBaseURL, Degraded: degraded}
	if err := json.Unmarshal(r.Inputs, &req.Inputs); err != nil {
		return nil, err
	}
	if s.media != nil {
		// The descriptions of the material the run shows, for its script (engine.InputMediaDescriptions):
		// the host's, read afresh at each execution, in place of any the inputs carry.
		delete(req.Inputs, engine.InputMediaDescriptions)
		if notes, err := s.media.RunMaterialNotes(ctx, r); err != nil {
			s.log.Warn("runs: the material's descriptions could not be read; the run goes on without them", "run_id", r.ID, "err", err)
		} else if len(notes) > 0 {
			req.Inputs[engine.InputMediaDescriptions] = notes
		}
	}
	// The contexts and resume input were written by Start and Resume from typed values: they decode.
	if len(r.UserContext) > 0 {
		_ = json.Unmarshal(r.UserContext, &req.User)
	}
	if len(r.ProjectContext) > 0 {
		_ = json.Unmarshal(r.ProjectContext, &req.Project)
	}
	if len(r.ResumeInput) > 0 {
		_ = json.Unmarshal(r.ResumeInput, &req.ResumeInput)
	}
	steps, err := s.st.ListTraceSteps(ctx, r.ID)
	if err != nil {
		return nil, err
	}
	for _, st := range steps {
		if st.Status != engine.StepCompleted {
			continue
		}
		var ts engine.TraceStep
		if json.Unmarshal(st.Step, &ts) != nil {
			continue
		}
		if req.Completed == nil {
			req.Completed = map[string]json.RawMessage{}
		}
		out, _ := json.Marshal(ts.Outputs) // decoded from the stored JSON just above: it marshals
		req.Completed[st.StepID] = out
	}
	project := req.Project.ProjectID
	if project == "" {
		project = r.ProjectID
	}
	req.Credential = s.toolCredential(r, project, wf.Timeout)
	return req, nil
}

// apply stores what a run came to. owner guards executor results ("" for callbacks).
func (s *Service) apply(ctx context.Context, runID, owner string, res *engine.RunResult) {
	if res == nil {
		res = &engine.RunResult{Status: engine.StatusFailed, Error: &engine.RunError{Code: string(errcode.Unknown), Message: "the engine returned no result"}}
	}
	from := []string{store.RunRunning}
	switch res.Status {
	case engine.StatusCompleted:
		out := res.Outputs
		if out == nil {
			out = map[string]any{}
		}
		out, failed := s.judge(ctx, runID, out)
		if failed != nil {
			s.fail(ctx, runID, owner, failed)
			return
		}
		b, err := json.Marshal(out)
		if err != nil { // an in-process engine's output that is not JSON (a NaN)
			s.fail(ctx, runID, owner, &engine.RunError{Code: string(errcode.WorkflowStepFailed), Message: "the run's outputs are not JSON: " + err.Error()})
			return
		}
		// The files the outputs name are assets before the run reads as completed: its result
		// names only recorded files (content.LiveOutputs drops the others).
		var degraded *string
		if r, err := s.st.GetRun(ctx, runID); err == nil {
			s.recordFiles(ctx, r, b)
			// An engine that answered from its own fallback says why in outputs.degraded (the
			// chatflow engine's local template, when Flowise refused or was down: Flowise's
			// message): that is the run's degraded reason too, unless it ran on a fallback
			// engine, whose reason it keeps.
			if d, _ := out["degraded"].(string); d != "" && r.Degraded == "" {
				degraded = &d
			}
		}
		hundred := 100.0
		r, err := s.st.UpdateRun(ctx, runID, store.RunUpdate{From: from, Status: store.RunCompleted, Owner: owner,
			Outputs: b, Completed: true, Release: true, ClearError: true, Progress: &hundred, Degraded: degraded})
		if err == nil {
			s.notifyProgress(ctx, r, 100)
			s.finished(ctx, r)
		}
	case engine.StatusPaused:
		aw := res.Awaiting
		if aw == nil {
			aw = &engine.Awaiting{Prompt: "Input needed"}
		}
		b, _ := json.Marshal(aw) // a struct of strings and numbers: Marshal cannot fail
		r, err := s.st.UpdateRun(ctx, runID, store.RunUpdate{From: from, Status: store.RunPaused, Owner: owner, Awaiting: b, Release: true})
		if err == nil {
			s.notifyStatus(ctx, r)
		}
	case engine.StatusWaiting:
		// Stays running until a callback or the job's time-out; no lease: nothing executes it now.
		_, err := s.st.UpdateRun(ctx, runID, store.RunUpdate{From: from, Status: store.RunRunning, Owner: owner, Release: true})
		s.log.Debug("runs: waiting", "run_id", runID, "err", err)
	case engine.StatusContinue:
		// The external work is done (a callback said so): handed to the executor again at once,
		// as a timed-out engine job's run is, for the engine's Run to finish it.
		now := s.st.Now()
		_, err := s.st.UpdateRun(ctx, runID, store.RunUpdate{From: from, Status: store.RunRunning, Owner: owner, Lease: &now, Unclaim: true})
		if err != nil {
			s.log.Warn("runs: hand a run back to finish it", "run_id", runID, "err", err)
			return
		}
		s.kick()
	default:
		s.fail(ctx, runID, owner, res.Error)
	}
}

// fail moves a running (or pending) run to failed with e.
func (s *Service) fail(ctx context.Context, runID, owner string, e *engine.RunError) {
	if e == nil {
		e = &engine.RunError{Code: string(errcode.WorkflowStepFailed), Message: "the run failed"}
	}
	if e.Code == "" {
		e.Code = string(errcode.WorkflowStepFailed)
	}
	b, _ := json.Marshal(e) // a struct of strings and numbers: Marshal cannot fail
	r, err := s.st.UpdateRun(ctx, runID, store.RunUpdate{From: []string{store.RunPending, store.RunRunning}, Status: store.RunFailed,
		Owner: owner, Error: b, Completed: true, Release: true})
	if err == nil {
		s.finished(ctx, r)
	}
}

// outage reports whether err says engine name's plugin or external tool is unavailable: its
// registry entry's outage codes, or EXTERNAL_SERVICE_ERROR (a plugin that died).
func (s *Service) outage(name string, err error) bool {
	code := errcode.Of(err)
	if e, ok := s.Manifests().Engine(name); ok {
		return e.Outage(code)
	}
	return code == errcode.ExternalService
}

// jobFailure is what failJobs fails: the unresolved jobs of run RunID, with Err; generator jobs
// too only with Generators. Owner, when set, is the claim of the execution failing them: each job
// is failed in a transaction that checks the run is still claimed by it (FenceRun), so an
// execution that lost its run cannot fail the jobs of the step its new owner executes.
type jobFailure struct {
	RunID, Owner string
	Generators   bool
	Err          *engine.RunError
}

// failJobs fails the jobs f names and lists them; without Generators, it leaves generator jobs
// in flight (a step executed again awaits the job it ordered before).
func (s *Service) failJobs(ctx context.Context, f jobFailure) []string {
	jobs, err := s.st.ListRunJobs(ctx, f.RunID)
	if err != nil {
		return nil
	}
	var ids []string
	for _, j := range jobs {
		if j.Resolved() || (!f.Generators && engine.IsGeneratorJob(j.Type)) {
			continue
		}
		if f.Owner == "" {
			ids = append(ids, j.ID)
			s.resolve(ctx, j.ID, engine.JobFailed, nil, f.Err)
			continue
		}
		_, err := s.resolveWith(ctx, j.ID, engine.JobFailed, nil, f.Err, func(tx Store, errObj json.RawMessage) (*store.Job, error) {
			if err := tx.FenceRun(ctx, f.RunID, f.Owner); err != nil {
				return nil, err
			}
			return tx.ResolveJob(ctx, store.ResolveJobParams{ID: j.ID, Status: engine.JobFailed, Error: errObj})
		})
		if err == nil {
			ids = append(ids, j.ID)
		} else if !errors.Is(err, store.ErrStale) {
			s.log.Warn("runs: fail job", "job_id", j.ID, "err", err)
		}
	}
	return ids
}
