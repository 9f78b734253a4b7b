package runs

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/reelforge/reelforge/internal/backoff"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// PluginJobs is the JobDispatcher of a host with plugins: the engine whose registry entry declares a
// job's type (generators for speech, videogen, music and videoparse) executes the job in its
// plugin, through a Run of engine.JobWorkflow that lasts as long as the work. Its answer resolves
// the job as an ai-callback would; an engine that handed the job to an external executor answers
// waiting and the executor calls back. The work never runs in the host: with the plugin down (or
// PLUGINS_ENABLED=false) the job fails with its type's code, and a plugin killed during the work
// fails it with that code and says so. Cancelling the run (CancelJob) cancels the call, and the
// plugin kills the job's tools. Create it with NewPluginJobs; safe for concurrent use.
type PluginJobs struct {
	s *Service

	mu      sync.Mutex
	stopped bool
	calls   map[string]*call // job id -> its call to the plugin
	wg      sync.WaitGroup

	// answers is the back-off of recording jobs' answers. The answers of every job wait for the
	// same database, so they share one: one log line per back-off step for all of them, not one
	// per job (a full disk under a few renders wrote 9 of the 40 lines a minute).
	answersMu sync.Mutex
	answers   backoff.Retry
}

// call is one call to a plugin about a job.
type call struct{ cancel context.CancelFunc }

// NewPluginJobs returns the JobDispatcher of s's plugin jobs.
func NewPluginJobs(s *Service) *PluginJobs {
	return &PluginJobs{s: s, calls: map[string]*call{}, answers: backoff.Retry{Log: s.log, What: "runs: record a plugin's job answer"}}
}

// Local reports true: the job's work is done by a plugin of this host, which dies with it (the
// job is held under this host's lease).
func (p *PluginJobs) Local(string) bool { return true }

// Dispatch hands job to its engine's plugin and returns at once; the call goes on in the
// background until the plugin answers. It answers an error (the job then fails with its type's
// code) when no live plugin can take the job.
func (p *PluginJobs) Dispatch(ctx context.Context, job *engine.Job, callbackURL string) error {
	name := p.s.jobEngine(job.Type)
	if p.s.plugins == nil {
		return errcode.Newf(errcode.ExternalService, "%s jobs run only in the %s plugin, and plugins are switched off (PLUGINS_ENABLED=false)", job.Type, name)
	}
	eng, err := p.s.plugins.Engine(name)
	if err != nil {
		why := err.Error()
		if ce := errcode.As(err); ce != nil {
			why = ce.Message()
		}
		return errcode.Newf(errcode.ExternalService, "the %s plugin that runs %s jobs is unavailable: %s", name, job.Type, why)
	}
	r, err := p.s.st.GetRun(ctx, job.RunID)
	if err != nil {
		return fmt.Errorf("runs: the run of job %s: %w", job.JobID, err)
	}
	owner, err := p.s.RunOwner(ctx, job.RunID)
	if err != nil {
		return fmt.Errorf("runs: the owner of job %s: %w", job.JobID, err)
	}
	var asInput map[string]any
	raw, _ := json.Marshal(job)       // a Job is strings, numbers, times and JSON it holds already
	_ = json.Unmarshal(raw, &asInput) // and so decodes to an object
	req := &engine.RunRequest{RunID: job.RunID, Workflow: engine.Workflow{ID: engine.JobWorkflow, Name: job.Type + " job", Engine: name},
		Inputs: map[string]any{"job": asInput}, User: owner, CallbackURL: callbackURL, Attempt: job.RetryCount + 1}

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return errcode.New(errcode.ExternalService, "the host is shutting down")
	}
	if old := p.calls[job.JobID]; old != nil {
		old.cancel() // a retry of the job (its time-out passed): the earlier call's answer no longer counts
	}
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c := &call{cancel: cancel}
	p.calls[job.JobID] = c
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer p.forget(job.JobID, c)
		res, err := eng.Run(cctx, p.s.hostFor(name, r), req)
		if cctx.Err() != nil {
			return // cancelled with its run (the job is failed already) or by the host's stop
		}
		p.resolve(job, name, res, err)
	}()
	return nil
}

// resolve records the plugin's answer about job.
func (p *PluginJobs) resolve(job *engine.Job, name string, res *engine.RunResult, err error) {
	var result json.RawMessage
	var failure *engine.RunError
	switch {
	case err != nil:
		failure = &engine.RunError{Code: string(p.s.jobErrorCode(job.Type)),
			Message: fmt.Sprintf("the %s plugin stopped during the %s job (the plugin is restarted)", name, job.Type)}
		p.s.log.Warn("runs: a plugin stopped during a job", "engine", name, "job_id", job.JobID, "type", job.Type, "err", err)
	case res == nil:
		failure = &engine.RunError{Code: string(p.s.jobErrorCode(job.Type)), Message: fmt.Sprintf("the %s plugin gave no answer", name)}
	case res.Status == engine.StatusWaiting:
		return // an external executor took it and calls back
	case res.Status == engine.StatusCompleted:
		var merr error
		if result, merr = json.Marshal(res.Outputs); merr != nil { // decoded from the plugin's JSON answer: not expected
			failure = &engine.RunError{Code: string(p.s.jobErrorCode(job.Type)), Message: "the job's result is not JSON: " + merr.Error()}
			result = nil
		}
	default:
		failure = res.Error
		if failure == nil {
			failure = &engine.RunError{Message: fmt.Sprintf("the %s job failed", job.Type)}
		}
		if c := errcode.Code(failure.Code); c == "" || c == errcode.ExternalService || c == errcode.Unknown || !errcode.Known(c) {
			failure.Code = string(p.s.jobErrorCode(job.Type)) // the job type's code, as its entry promises
		}
	}
	// The work is done: a database that refuses its answer (down, disk full) gets it again with
	// the host's back-off, rather than the job waiting for its time-out and being done again.
	// The job stays held by this host's life meanwhile, so no one takes it for abandoned.
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := p.s.CompleteJob(ctx, job.JobID, result, failure)
		cancel()
		if err == nil {
			p.answersMu.Lock()
			p.answers.Succeeded()
			p.answersMu.Unlock()
			return
		}
		if errcode.As(err) != nil {
			p.s.log.Info("runs: a plugin's job answer not recorded", "job_id", job.JobID, "err", err)
			return
		}
		p.answersMu.Lock()
		wait := p.answers.Failed(err, "job_id", job.JobID)
		p.answersMu.Unlock()
		backoff.Sleep(context.Background(), wait)
	}
}

func (p *PluginJobs) forget(jobID string, c *call) {
	p.mu.Lock()
	if p.calls[jobID] == c {
		delete(p.calls, jobID)
	}
	c.cancel()
	p.mu.Unlock()
}

// CancelJob stops the plugin's work on a job (its run was cancelled): the call is cancelled and
// the plugin kills the job's tools.
func (p *PluginJobs) CancelJob(jobID string) {
	p.mu.Lock()
	c := p.calls[jobID]
	p.mu.Unlock()
	if c != nil {
		c.cancel()
	}
}

// Stop cancels the calls in flight and waits for them to return; Dispatch refuses work afterwards.
// The jobs stay unresolved under this host's lease: the next life finds them interrupted.
func (p *PluginJobs) Stop() {
	p.mu.Lock()
	p.stopped = true
	for _, c := range p.calls {
		c.cancel()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
