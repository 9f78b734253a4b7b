package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// reportTimeout bounds the trace reports sent after the run's context ended.
const reportTimeout = 5 * time.Second

// run is the state of one Run call. Only the scheduling goroutine (execute) touches its maps; step
// goroutines get their own stepCtx with copies of what they read.
type run struct {
	e     *Engine
	h     engine.Host
	req   *engine.RunRequest
	steps []engine.Step
	with  []map[string]any
	index map[string]int
	// ancestors[i] are the indexes of every step step i depends on, directly or not, in declaration order.
	ancestors [][]int
	sinks     []bool // no step depends on it

	outputs map[int]map[string]any // outputs of completed and skipped steps
	state   []stepState
	skipped []any // {step_id, reason} of skipped steps
}

type stepState int

const (
	statePending stepState = iota
	stateRunning
	stateDone // completed or skipped
	stateFailed
)

// outcome is what one step came to, sent from its goroutine to execute.
type outcome struct {
	i       int
	outputs map[string]any
	skipped string // reason, when the step was skipped
	err     error
}

// newRun checks the workflow and prepares the run. A workflow the engine cannot execute yields a
// failed result instead.
func newRun(e *Engine, h engine.Host, req *engine.RunRequest) (*run, *engine.RunResult) {
	steps := req.Workflow.Steps
	r := &run{
		e: e, h: h, req: req, steps: steps,
		with:    make([]map[string]any, len(steps)),
		index:   make(map[string]int, len(steps)),
		outputs: map[int]map[string]any{},
		state:   make([]stepState, len(steps)),
		sinks:   make([]bool, len(steps)),
	}
	fail := func(code errcode.Code, stepID, format string, args ...any) (*run, *engine.RunResult) {
		return nil, &engine.RunResult{Status: engine.StatusFailed, Error: &engine.RunError{
			Code: string(code), Message: fmt.Sprintf(format, args...), StepID: stepID}}
	}
	if len(steps) == 0 {
		return fail(errcode.WorkflowInvalidState, "", "workflow %q has no node steps", req.Workflow.ID)
	}
	for i, s := range steps {
		if s.ID == "" {
			return fail(errcode.Validation, "", "steps[%d] has no id", i)
		}
		if _, dup := r.index[s.ID]; dup {
			return fail(errcode.Validation, s.ID, "duplicate step %q", s.ID)
		}
		r.index[s.ID] = i
		if _, ok := agents[s.Agent]; !ok {
			return fail(errcode.AgentNotFound, s.ID, "step %q: unknown agent %q", s.ID, s.Agent)
		}
		r.with[i] = map[string]any{}
		if len(s.With) > 0 {
			if err := json.Unmarshal(s.With, &r.with[i]); err != nil {
				return fail(errcode.Validation, s.ID, "step %q: with is not a JSON object", s.ID)
			}
		}
		r.sinks[i] = true
	}
	for _, s := range steps {
		for _, d := range s.DependsOn {
			j, ok := r.index[d]
			if !ok {
				return fail(errcode.Validation, s.ID, "step %q depends on unknown step %q", s.ID, d)
			}
			r.sinks[j] = false
		}
	}
	order, ok := r.topo()
	if !ok {
		return fail(errcode.Validation, "", "the steps of workflow %q form a cycle", req.Workflow.ID)
	}
	r.ancestors = make([][]int, len(steps))
	for _, i := range order {
		set := map[int]bool{}
		for _, d := range steps[i].DependsOn {
			j := r.index[d]
			set[j] = true
			for _, a := range r.ancestors[j] {
				set[a] = true
			}
		}
		r.ancestors[i] = slices.Sorted(maps.Keys(set))
	}
	for id, raw := range req.Completed {
		i, ok := r.index[id]
		if !ok {
			continue // a step of an older version of the workflow
		}
		r.outputs[i] = decodeOutputs(raw)
		r.state[i] = stateDone
	}
	return r, nil
}

// topo returns the steps in a dependency order, or false when they form a cycle.
func (r *run) topo() ([]int, bool) {
	indeg := make([]int, len(r.steps))
	for i, s := range r.steps {
		indeg[i] = len(s.DependsOn)
	}
	var order, queue []int
	for i, n := range indeg {
		if n == 0 {
			queue = append(queue, i)
		}
	}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		order = append(order, i)
		for j, s := range r.steps {
			for _, d := range s.DependsOn {
				if d == r.steps[i].ID {
					indeg[j]--
					if indeg[j] == 0 {
						queue = append(queue, j)
					}
				}
			}
		}
	}
	return order, len(order) == len(r.steps)
}

func decodeOutputs(raw json.RawMessage) map[string]any {
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err == nil && out != nil {
		return out
	}
	var v any
	if err := json.Unmarshal(raw, &v); err == nil && v != nil {
		return map[string]any{"value": v}
	}
	return map[string]any{}
}

// ready reports whether every dependency of step i is done.
func (r *run) ready(i int) bool {
	for _, d := range r.steps[i].DependsOn {
		if r.state[r.index[d]] != stateDone {
			return false
		}
	}
	return true
}

// execute runs the DAG. ctx is the run's context (cancelled by Cancel); parent is Run's own.
func (r *run) execute(parent, ctx context.Context) (*engine.RunResult, error) {
	if t := r.req.Workflow.Timeout; t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t)
		defer cancel()
	}
	results := make(chan outcome, len(r.steps))
	var (
		running    int
		failure    *engine.RunError
		awaiting   *engine.Awaiting
		resumeUsed = len(r.req.ResumeInput) == 0 // no resume input, or it went to a step already
	)
	// launch starts the ready steps (in declaration order, within the concurrency bound) and reports
	// whether it changed anything; human_input steps are handled inline.
	launch := func() bool {
		changed := false
		for i := range r.steps {
			if running >= r.e.opts.Concurrency || awaiting != nil {
				break
			}
			if r.state[i] != statePending || !r.ready(i) {
				continue
			}
			changed = true
			if r.steps[i].Agent == "human_input" {
				if !resumeUsed {
					resumeUsed = true
					r.resumeStep(ctx, i)
					continue
				}
				awaiting = r.pauseStep(ctx, i)
				break
			}
			r.state[i] = stateRunning
			running++
			r.progress(ctx, r.steps[i].ID)
			sc := r.stepCtx(i)
			go func() { results <- r.runStep(ctx, sc) }()
		}
		return changed
	}
	for {
		for failure == nil && awaiting == nil && ctx.Err() == nil && launch() {
		}
		if running == 0 {
			break
		}
		o := <-results
		running--
		switch {
		case o.err != nil:
			r.state[o.i] = stateFailed
			if failure == nil && ctx.Err() == nil {
				failure = runError(r.steps[o.i], o.err)
			}
		case o.skipped != "":
			r.state[o.i] = stateDone
			r.outputs[o.i] = o.outputs
			r.skipped = append(r.skipped, map[string]any{"step_id": r.steps[o.i].ID, "reason": o.skipped})
		default:
			r.state[o.i] = stateDone
			r.outputs[o.i] = o.outputs
		}
		r.progress(ctx, "")
	}

	if err := ctx.Err(); err != nil {
		switch {
		case parent.Err() != nil && errors.Is(parent.Err(), context.DeadlineExceeded):
			return nil, errcode.E("node.run", errcode.WorkflowTimeout, "", err)
		case errors.Is(err, context.DeadlineExceeded):
			return &engine.RunResult{Status: engine.StatusFailed, Error: &engine.RunError{
				Code:    string(errcode.WorkflowTimeout),
				Message: fmt.Sprintf("workflow %q did not finish within %s", r.req.Workflow.ID, r.req.Workflow.Timeout),
			}}, nil
		default:
			return nil, errcode.E("node.run", errcode.WorkflowCancelled, "", err)
		}
	}
	if failure != nil {
		return &engine.RunResult{Status: engine.StatusFailed, Error: failure}, nil
	}
	if awaiting != nil {
		return &engine.RunResult{Status: engine.StatusPaused, Awaiting: awaiting}, nil
	}
	for i, st := range r.state {
		if st != stateDone {
			return &engine.RunResult{Status: engine.StatusFailed, Error: &engine.RunError{
				Code: string(errcode.WorkflowStepFailed), StepID: r.steps[i].ID,
				Message: fmt.Sprintf("step %q could not run", r.steps[i].ID)}}, nil
		}
	}
	if err := r.h.ReportProgress(ctx, r.req.RunID, 100, ""); err != nil {
		r.e.opts.Logger.Warn("node: report progress", "run_id", r.req.RunID, "err", err)
	}
	return &engine.RunResult{Status: engine.StatusCompleted, Outputs: r.runOutputs()}, nil
}

// runError turns the error of step s into the run's error.
func runError(s engine.Step, err error) *engine.RunError {
	code := errcode.Of(err)
	if code == errcode.Unknown || !errcode.Known(code) {
		code = errcode.WorkflowStepFailed
	}
	msg := err.Error()
	if e := errcode.As(err); e != nil {
		msg = e.Message()
	}
	return &engine.RunError{
		Code:    string(code),
		Message: fmt.Sprintf("step %q (%s) failed: %s", s.ID, s.Agent, msg),
		StepID:  s.ID,
	}
}

// resumeStep completes the human_input step i with the run's resume input.
func (r *run) resumeStep(ctx context.Context, i int) {
	now := r.e.opts.Now()
	out := maps.Clone(r.req.ResumeInput)
	r.report(ctx, r.trace(i, engine.StepCompleted, r.humanInputs(i), out, now, now, nil, nil), true)
	r.state[i] = stateDone
	r.outputs[i] = out
}

// pauseStep records that the human_input step i waits for input and says what it waits for.
func (r *run) pauseStep(ctx context.Context, i int) *engine.Awaiting {
	in := r.humanInputs(i)
	r.report(ctx, engine.TraceStep{
		StepID: r.steps[i].ID, StepName: r.steps[i].Name, Agent: r.steps[i].Agent,
		Status: engine.StepPending, Inputs: in, Engine: Name, Degraded: r.req.Degraded,
	}, true)
	if err := r.h.ReportProgress(ctx, r.req.RunID, r.percent(), r.steps[i].ID); err != nil {
		r.e.opts.Logger.Warn("node: report progress", "run_id", r.req.RunID, "err", err)
	}
	return &engine.Awaiting{StepID: r.steps[i].ID, Prompt: in["prompt"].(string)}
}

func (r *run) humanInputs(i int) map[string]any {
	prompt, _ := r.with[i]["prompt"].(string)
	if prompt == "" {
		prompt = fmt.Sprintf("Input needed for step %q", r.steps[i].Name)
	}
	return map[string]any{"prompt": prompt}
}

// stepCtx gathers what step i needs; it is called by execute before the step's goroutine starts.
func (r *run) stepCtx(i int) *stepCtx {
	sc := &stepCtx{
		step: r.steps[i], with: r.with[i], req: r.req, h: r.h,
		deps: map[string]map[string]any{},
	}
	for _, d := range r.steps[i].DependsOn {
		sc.deps[d] = r.outputs[r.index[d]]
		sc.depOrder = append(sc.depOrder, d)
	}
	for _, a := range r.ancestors[i] {
		sc.upstream = append(sc.upstream, r.outputs[a])
	}
	sc.skipped = slices.Clone(r.skipped)
	sc.index = i
	return sc
}

// runStep executes one step with its retries and reports it. It runs on its own goroutine.
func (r *run) runStep(ctx context.Context, sc *stepCtx) outcome {
	i, s := sc.index, sc.step
	ag := agents[s.Agent]
	in := ag.inputs(sc)
	start := r.e.opts.Now()
	r.report(ctx, engine.TraceStep{
		StepID: s.ID, StepName: s.Name, Agent: s.Agent, Status: engine.StepRunning,
		Inputs: in, StartedAt: &start, Engine: Name, Degraded: r.req.Degraded,
	}, false)

	if reason := whenInput(sc); reason != "" {
		out := map[string]any{"skipped": true, "reason": reason}
		r.report(ctx, r.trace(i, engine.StepSkipped, in, out, start, r.e.opts.Now(), nil, nil), true)
		return outcome{i: i, outputs: out, skipped: reason}
	}

	retries := r.e.opts.Retries
	if s.Retries != nil {
		retries = *s.Retries
	}
	var (
		res *result
		err error
	)
	backoff := r.e.opts.RetryBackoff
	for attempt := 0; ; attempt++ {
		res, err = ag.run(ctx, sc, in)
		if err == nil || ctx.Err() != nil || attempt >= retries || !retryable(err) {
			break
		}
		r.e.opts.Logger.Info("node: retrying step", "run_id", r.req.RunID, "step_id", s.ID, "attempt", attempt+1, "err", err)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
		backoff *= 2
	}
	end := r.e.opts.Now()
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil {
		serr := stepError(err, ctx)
		if optional, _ := sc.with["optional"].(bool); optional && ctx.Err() == nil {
			reason := serr.Code + ": " + serr.Message
			out := map[string]any{"skipped": true, "reason": reason}
			r.report(ctx, r.trace(i, engine.StepSkipped, in, out, start, end, nil, serr), true)
			return outcome{i: i, outputs: out, skipped: reason}
		}
		r.report(ctx, r.trace(i, engine.StepFailed, in, nil, start, end, nil, serr), true)
		return outcome{i: i, err: err}
	}
	r.report(ctx, r.trace(i, engine.StepCompleted, in, res.outputs, start, end, res, nil), true)
	return outcome{i: i, outputs: res.outputs}
}

// whenInput returns why the step is skipped by its `when_input` condition, or "".
func whenInput(sc *stepCtx) string {
	var names []string
	switch v := sc.with["when_input"].(type) {
	case string:
		names = []string{v}
	case []any:
		for _, n := range v {
			if s, ok := n.(string); ok {
				names = append(names, s)
			}
		}
	default:
		return ""
	}
	for _, n := range names {
		if v, ok := sc.req.Inputs[n]; ok && v != nil && v != "" {
			return ""
		}
	}
	return "input " + strings.Join(names, " or ") + " not given"
}

// retryable reports whether an agent failure may be retried: agent errors and unclassified ones
// (network trouble inside an agent), never business or external-service errors (SPEC.md Limits).
func retryable(err error) bool {
	switch errcode.Of(err) {
	case errcode.AgentExecutionFailed, errcode.AgentTimeout, errcode.AgentInvalidOutput,
		errcode.AgentToolFailed, errcode.Unknown:
		return true
	}
	return false
}

func stepError(err error, ctx context.Context) *engine.StepError {
	if ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return &engine.StepError{Code: string(errcode.WorkflowTimeout), Message: "the workflow timed out during this step"}
		}
		return &engine.StepError{Code: string(errcode.WorkflowCancelled), Message: "the run was cancelled during this step"}
	}
	code := errcode.Of(err)
	msg := err.Error()
	if e := errcode.As(err); e != nil {
		msg = e.Message()
	}
	return &engine.StepError{Code: string(code), Message: msg}
}

// trace builds a finished trace step.
func (r *run) trace(i int, status string, in, out map[string]any, start, end time.Time, res *result, serr *engine.StepError) engine.TraceStep {
	s := r.steps[i]
	ms := float64(end.Sub(start).Microseconds()) / 1000
	ts := engine.TraceStep{
		StepID: s.ID, StepName: s.Name, Agent: s.Agent, Status: status, Inputs: in, Outputs: out,
		StartedAt: &start, CompletedAt: &end, DurationMS: &ms, Error: serr,
		Engine: Name, Degraded: r.req.Degraded,
	}
	if res != nil && res.usage {
		tokens, cost := res.tokens, res.cost
		ts.TokensUsed, ts.CostUSD = &tokens, &cost
	}
	return ts
}

// report sends a trace step to the host. Final reports survive the end of the run's context so a
// cancelled run's trace still says how its steps ended.
func (r *run) report(ctx context.Context, ts engine.TraceStep, final bool) {
	if ts.StepID == "" {
		return
	}
	if ts.Inputs == nil {
		ts.Inputs = map[string]any{}
	}
	if ctx.Err() != nil {
		if !final {
			return
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), reportTimeout)
		defer cancel()
	}
	if err := r.h.ReportStep(ctx, r.req.RunID, ts); err != nil {
		r.e.opts.Logger.Warn("node: report step", "run_id", r.req.RunID, "step_id", ts.StepID, "err", err)
	}
}

// percent is the share of steps done, 0 to 99 while the run goes on.
func (r *run) percent() float64 {
	done := 0
	for _, st := range r.state {
		if st == stateDone {
			done++
		}
	}
	p := float64(done) * 100 / float64(len(r.steps))
	return min(p, 99)
}

func (r *run) progress(ctx context.Context, current string) {
	if ctx.Err() != nil {
		return
	}
	if err := r.h.ReportProgress(ctx, r.req.RunID, r.percent(), current); err != nil {
		r.e.opts.Logger.Warn("node: report progress", "run_id", r.req.RunID, "err", err)
	}
}

// runOutputs builds the outputs of a completed run: every step's outputs under its id, and at the
// top level the final script and title, the outputs of the final steps (those no step depends on)
// and the steps that were skipped. A top-level key never hides a step id.
func (r *run) runOutputs() map[string]any {
	out := map[string]any{}
	for i, s := range r.steps {
		out[s.ID] = r.outputs[i]
	}
	set := func(k string, v any) {
		if _, isStep := r.index[k]; !isStep && v != nil {
			out[k] = v
		}
	}
	for i := len(r.steps) - 1; i >= 0; i-- {
		if s, ok := r.outputs[i]["script"].(string); ok && s != "" {
			set("script", s)
			if t, ok := r.outputs[i]["title"].(string); ok && t != "" {
				set("title", t)
			}
			break
		}
	}
	for i := range r.steps {
		if !r.sinks[i] || r.outputs[i]["skipped"] == true {
			continue
		}
		for k, v := range r.outputs[i] {
			set(k, v)
		}
	}
	if len(r.skipped) > 0 {
		set("skipped_steps", r.skipped)
	}
	return out
}
