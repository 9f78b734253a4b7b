package api

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/reelforge/reelforge/host/metrics"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// workflowSampler reads the records of a metrics window (both store drivers implement it).
type workflowSampler interface {
	WorkflowSamples(ctx context.Context, p store.WorkflowSampleParams) (*store.WorkflowSamples, error)
}

const maxMetricsWindow = 90 * 24 * time.Hour

const workflowMetricsDesc = "Admins see every user's runs (scope all), other users their own (scope own). " +
	"Each figure is {value, samples, target, compare, met}; met is null without samples. " +
	"Success rate is completed over completed plus failed; duration is started to completed of completed runs; " +
	"job time-out rate is over resolved jobs; agent error rate over completed and failed trace steps; " +
	"callback delay runs from the executor's reported completion (else the dispatch) to the callback's arrival."

// workflowMetricsInput is the window: the times are read by the handler, whose messages say
// which of them is wrong and why.
type workflowMetricsInput struct {
	Window string `query:"window" doc:"a duration such as 24h or 7d (default 24h, at most 90 days)"`
	Since  string `query:"since" doc:"RFC 3339; instead of window"`
	Until  string `query:"until" doc:"RFC 3339 (default now)"`
}

// workflowMetrics answers GET /api/workflow/metrics?window=24h (or since=&until=, RFC 3339): run
// counts, success rate, durations, job time-outs, agent errors, callback delay and degraded runs,
// each figure with its SPEC.md target. Admins see everyone's runs, other users their own.
func (s *Server) workflowMetrics(ctx context.Context, in *workflowMetricsInput) (*Top[metrics.WorkflowReport], error) {
	ws, ok := s.Store.(workflowSampler)
	if !ok {
		return nil, errcode.New(errcode.ResourceExhausted, "Workflow metrics are not available on this store")
	}
	until := time.Now().UTC()
	if in.Until != "" {
		t, err := time.Parse(time.RFC3339, in.Until)
		if err != nil {
			return nil, errcode.Invalid("until", "must be an RFC 3339 time")
		}
		until = t.UTC()
	}
	since := until.Add(-24 * time.Hour)
	switch {
	case in.Since != "":
		t, err := time.Parse(time.RFC3339, in.Since)
		if err != nil {
			return nil, errcode.Invalid("since", "must be an RFC 3339 time")
		}
		since = t.UTC()
	case in.Window != "":
		d, err := parseWindow(in.Window)
		if err != nil {
			return nil, errcode.Invalid("window", err.Error())
		}
		since = until.Add(-d)
	}
	if !since.Before(until) || until.Sub(since) > maxMetricsWindow {
		return nil, errcode.Invalid("window", "must be positive and at most 90 days")
	}
	p := caller(ctx)
	scope, user := "own", p.UserID
	if p.IsAdmin() {
		scope, user = "all", ""
	}
	smp, err := ws.WorkflowSamples(ctx, store.WorkflowSampleParams{Since: since, Until: until, UserID: user})
	if err != nil {
		return nil, err
	}
	return answerTop(*metrics.Workflow(smp, since, until, scope))
}

// parseWindow reads a Go duration ("24h", "90m") or a number of days ("7d").
func parseWindow(v string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(v, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 1 {
			return 0, fmt.Errorf("must be a duration such as 24h or 7d")
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("must be a duration such as 24h or 7d")
	}
	return d, nil
}
