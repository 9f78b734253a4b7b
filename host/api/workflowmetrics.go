package api

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/reelforge/reelforge/host/metrics"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// workflowSampler reads the records of a metrics window (both store drivers implement it).
type workflowSampler interface {
	WorkflowSamples(ctx context.Context, p store.WorkflowSampleParams) (*store.WorkflowSamples, error)
}

const maxMetricsWindow = 90 * 24 * time.Hour

// workflowMetrics answers GET /api/workflow/metrics?window=24h (or since=&until=, RFC 3339): run
// counts, success rate, durations, job time-outs, agent errors, callback delay and degraded runs,
// each figure with its SPEC.md target. Admins see everyone's runs, other users their own.
func (s *Server) workflowMetrics(c *fiber.Ctx) error {
	ws, ok := s.Store.(workflowSampler)
	if !ok {
		return errcode.New(errcode.ResourceExhausted, "Workflow metrics are not available on this store")
	}
	until := time.Now().UTC()
	if v := c.Query("until"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return errcode.Invalid("until", "must be an RFC 3339 time")
		}
		until = t.UTC()
	}
	since := until.Add(-24 * time.Hour)
	switch {
	case c.Query("since") != "":
		t, err := time.Parse(time.RFC3339, c.Query("since"))
		if err != nil {
			return errcode.Invalid("since", "must be an RFC 3339 time")
		}
		since = t.UTC()
	case c.Query("window") != "":
		d, err := parseWindow(c.Query("window"))
		if err != nil {
			return errcode.Invalid("window", err.Error())
		}
		since = until.Add(-d)
	}
	if !since.Before(until) || until.Sub(since) > maxMetricsWindow {
		return errcode.Invalid("window", "must be positive and at most 90 days")
	}
	p := principal(c)
	scope, user := "own", p.UserID
	if p.IsAdmin() {
		scope, user = "all", ""
	}
	smp, err := ws.WorkflowSamples(s.ctx(c), store.WorkflowSampleParams{Since: since, Until: until, UserID: user})
	if err != nil {
		return err
	}
	return c.JSON(struct {
		Success bool `json:"success"`
		*metrics.WorkflowReport
	}{true, metrics.Workflow(smp, since, until, scope)})
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
