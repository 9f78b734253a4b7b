package metrics

import (
	"math"
	"sort"
	"time"

	"github.com/reelforge/reelforge/host/store"
)

// The targets of SPEC.md "Limits" that the workflow metrics check.
const (
	TargetRunSuccessRate  = 0.95 // at least
	TargetRunAvgSeconds   = 60   // at most
	TargetJobTimeoutRate  = 0.05 // at most
	TargetAgentErrorRate  = 0.10 // at most
	TargetCallbackSeconds = 5    // at most (checked on p95)
)

// Figure is one measured value with its SPEC.md target. Met is nil when there was nothing to
// measure (no samples).
type Figure struct {
	Value   float64 `json:"value"`
	Samples int     `json:"samples"`
	Target  float64 `json:"target"`
	Compare string  `json:"compare"` // ">=" or "<=": how Value must relate to Target
	Met     *bool   `json:"met"`
}

func figure(value float64, samples int, target float64, atLeast bool) Figure {
	f := Figure{Value: round(value), Samples: samples, Target: target, Compare: "<="}
	if atLeast {
		f.Compare = ">="
	}
	if samples > 0 {
		met := value <= target
		if atLeast {
			met = value >= target
		}
		f.Met = &met
	}
	return f
}

func round(v float64) float64 { return math.Round(v*1000) / 1000 }

// RunCounts are runs by status, with the success rate over finished runs.
type RunCounts struct {
	Total       int            `json:"total"`
	ByStatus    map[string]int `json:"by_status"`
	SuccessRate Figure         `json:"success_rate"`
}

// RateFigure is a failure rate of one kind (a job type, an agent).
type RateFigure struct {
	Total    int    `json:"total"`
	Failures int    `json:"failures"`
	Rate     Figure `json:"rate"`
}

// WorkflowReport is the answer of GET /api/workflow/metrics.
type WorkflowReport struct {
	From  time.Time `json:"from"`
	To    time.Time `json:"to"`
	Scope string    `json:"scope"` // "all" (admin) or "own"

	Runs       RunCounts            `json:"runs"`
	ByWorkflow map[string]RunCounts `json:"by_workflow"`
	ByEngine   map[string]RunCounts `json:"by_engine"`

	Duration struct {
		Average Figure  `json:"avg_s"`
		P95     float64 `json:"p95_s"`
		Samples int     `json:"samples"`
	} `json:"duration"`

	JobTimeouts struct {
		Overall RateFigure            `json:"overall"`
		ByType  map[string]RateFigure `json:"by_type"`
	} `json:"job_timeouts"`

	AgentErrors struct {
		Overall RateFigure            `json:"overall"`
		ByAgent map[string]RateFigure `json:"by_agent"`
	} `json:"agent_errors"`

	CallbackDelay struct {
		P50 float64 `json:"p50_s"`
		P95 Figure  `json:"p95_s"`
	} `json:"callback_delay"`

	Degraded struct {
		Count    int            `json:"count"`
		ByReason map[string]int `json:"by_reason"`
	} `json:"degraded"`
}

type runTally struct {
	byStatus map[string]int
	total    int
}

func (t *runTally) add(status string) {
	if t.byStatus == nil {
		t.byStatus = map[string]int{}
	}
	t.byStatus[status]++
	t.total++
}

// counts turns a tally into RunCounts: the success rate is completed over completed plus failed
// (cancelled and unfinished runs do not count).
func (t *runTally) counts() RunCounts {
	done, failed := t.byStatus["completed"], t.byStatus["failed"]
	rate := 0.0
	if done+failed > 0 {
		rate = float64(done) / float64(done+failed)
	}
	bs := t.byStatus
	if bs == nil {
		bs = map[string]int{}
	}
	return RunCounts{Total: t.total, ByStatus: bs, SuccessRate: figure(rate, done+failed, TargetRunSuccessRate, true)}
}

// tally returns m[k], made when missing.
func tally(m map[string]*runTally, k string) *runTally {
	if m[k] == nil {
		m[k] = &runTally{}
	}
	return m[k]
}

func rate(total, failures int, target float64) RateFigure {
	r := 0.0
	if total > 0 {
		r = float64(failures) / float64(total)
	}
	return RateFigure{Total: total, Failures: failures, Rate: figure(r, total, target, false)}
}

// Workflow computes the workflow report of the samples of [from, to).
func Workflow(s *store.WorkflowSamples, from, to time.Time, scope string) *WorkflowReport {
	r := &WorkflowReport{From: from.UTC(), To: to.UTC(), Scope: scope,
		ByWorkflow: map[string]RunCounts{}, ByEngine: map[string]RunCounts{}}
	var all runTally
	wf, eng := map[string]*runTally{}, map[string]*runTally{}
	var durations []float64
	r.Degraded.ByReason = map[string]int{}
	for _, run := range s.Runs {
		all.add(run.Status)
		tally(wf, run.WorkflowID).add(run.Status)
		tally(eng, run.Engine).add(run.Status)
		if run.Status == "completed" && run.CompletedAt != nil {
			start := run.CreatedAt
			if run.StartedAt != nil {
				start = *run.StartedAt
			}
			durations = append(durations, run.CompletedAt.Sub(start).Seconds())
		}
		if run.Degraded != "" {
			r.Degraded.Count++
			r.Degraded.ByReason[run.Degraded]++
		}
	}
	r.Runs = all.counts()
	for k, t := range wf {
		r.ByWorkflow[k] = t.counts()
	}
	for k, t := range eng {
		r.ByEngine[k] = t.counts()
	}
	sort.Float64s(durations)
	r.Duration.Samples = len(durations)
	r.Duration.Average = figure(mean(durations), len(durations), TargetRunAvgSeconds, false)
	r.Duration.P95 = round(Quantile(durations, 0.95))

	// Job time-outs over resolved jobs; callback delay from the executor's completion (else the
	// dispatch) to the callback's arrival, for jobs resolved by a callback.
	var jobs failTally
	var delays []float64
	for _, j := range s.Jobs {
		if j.Status == "pending" || j.Status == "running" {
			continue
		}
		jobs.add(j.Type, j.Status == "timeout")
		if j.Status == "timeout" || j.ResolvedAt == nil {
			continue
		}
		from := j.ExternalCompletedAt
		if from == nil {
			from = j.DispatchedAt
		}
		if from != nil {
			delays = append(delays, math.Max(0, j.ResolvedAt.Sub(*from).Seconds()))
		}
	}
	r.JobTimeouts.Overall, r.JobTimeouts.ByType = jobs.rates(TargetJobTimeoutRate)
	sort.Float64s(delays)
	r.CallbackDelay.P50 = round(Quantile(delays, 0.5))
	r.CallbackDelay.P95 = figure(Quantile(delays, 0.95), len(delays), TargetCallbackSeconds, false)

	// Agent error rate over finished steps (completed or failed; skipped and running do not count).
	var steps failTally
	for _, st := range s.Steps {
		if st.Status == "completed" || st.Status == "failed" {
			steps.add(st.Agent, st.Status == "failed")
		}
	}
	r.AgentErrors.Overall, r.AgentErrors.ByAgent = steps.rates(TargetAgentErrorRate)
	return r
}

// failTally counts outcomes, and the failed ones, overall and by a key (a job's type, a step's agent).
type failTally struct {
	total, fail int
	byKey       map[string]*failTally
}

func (t *failTally) add(key string, failed bool) {
	if t.byKey == nil {
		t.byKey = map[string]*failTally{}
	}
	k := t.byKey[key]
	if k == nil {
		k = &failTally{}
		t.byKey[key] = k
	}
	for _, c := range []*failTally{t, k} {
		c.total++
		if failed {
			c.fail++
		}
	}
}

// rates are the failure rates of t against target: overall and by key.
func (t *failTally) rates(target float64) (RateFigure, map[string]RateFigure) {
	by := map[string]RateFigure{}
	for k, c := range t.byKey {
		by[k] = rate(c.total, c.fail, target)
	}
	return rate(t.total, t.fail, target), by
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}
