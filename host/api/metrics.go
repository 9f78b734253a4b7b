package api

import (
	"bytes"
	"crypto/subtle"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/reelforge/reelforge/host/metrics"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// routeUnmatched labels requests that matched no route, so probes of random paths do not add
// series.
const routeUnmatched = "unmatched"

// defaultMetrics reads the store, the engine states and, when Engines reports them, the engine
// restarts.
func (s *Server) defaultMetrics() *metrics.Metrics {
	src := metrics.Sources{Engines: s.Engines, Log: s.Log}.FromStore(s.Store)
	if r, ok := s.Engines.(metrics.EngineRestarts); ok {
		src.Restarts = r
	}
	return metrics.New(src)
}

// countRequests records every request in the Prometheus HTTP metrics by route template and status.
func (s *Server) countRequests(c *fiber.Ctx) error {
	start := time.Now()
	err := c.Next()
	status := c.Response().StatusCode()
	if err != nil {
		status = toCoded(err).HTTPStatus()
	}
	route := c.Route().Path
	if err == errNoRoute || (route == "/" && c.Path() != "/") {
		route = routeUnmatched
	}
	s.Metrics.ObserveRequest(c.Method(), route, status, time.Since(start))
	return err
}

// serveMetrics answers GET /metrics in the Prometheus text format. With METRICS_TOKEN set, only
// callers sending `Authorization: Bearer <METRICS_TOKEN>` are served; without it, only direct
// loopback callers (a request relayed by a proxy, one carrying X-Forwarded-For or Forwarded, is
// refused even from loopback). So the endpoint is never open by accident.
func (s *Server) serveMetrics(c *fiber.Ctx) error {
	if want := s.Config.MetricsToken; want != "" {
		got, ok := strings.CutPrefix(c.Get(fiber.HeaderAuthorization), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(want)) != 1 {
			return errcode.New(errcode.Authentication, "A valid metrics token is required")
		}
	} else if !c.Context().RemoteIP().IsLoopback() || c.Get(fiber.HeaderXForwardedFor) != "" || c.Get("Forwarded") != "" {
		return errcode.New(errcode.Authorization, "Metrics are served to loopback callers only unless METRICS_TOKEN is set")
	}
	var buf bytes.Buffer
	if err := s.Metrics.Write(&buf); err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, metrics.ContentType)
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Send(buf.Bytes())
}
