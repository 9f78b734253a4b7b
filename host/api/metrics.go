package api

import (
	"bytes"
	"crypto/subtle"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/gofiber/fiber/v2"

	"github.com/reelforge/reelforge/host/api/apidoc"
	"github.com/reelforge/reelforge/host/kb"
	"github.com/reelforge/reelforge/host/metrics"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// routeUnmatched labels requests that matched no route, so probes of random paths do not add
// series.
const routeUnmatched = "unmatched"

// defaultMetrics reads the store, the durable queue, the engine states, the knowledge base's vector cache and, when
// Engines reports them, the engine restarts.
func (s *Server) defaultMetrics() *metrics.Metrics {
	src := metrics.Sources{Engines: s.Engines, Queue: s.Queue, Log: s.Log}.FromStore(s.Store)
	if r, ok := s.Engines.(metrics.EngineRestarts); ok {
		src.Restarts = r
	}
	if s.KB != nil {
		src.VectorCache = kbVectorCache{s.KB}
	}
	return metrics.New(src)
}

// kbVectorCache gives host/metrics the knowledge base's vector cache figures (metrics does not
// import host/kb).
type kbVectorCache struct{ kb *kb.Service }

func (k kbVectorCache) VectorCacheStats() metrics.VectorCacheStats {
	v := k.kb.VectorCacheStats()
	return metrics.VectorCacheStats{Bytes: v.Bytes, BudgetBytes: v.BudgetBytes, Entries: v.Entries,
		Hits: v.Hits, Misses: v.Misses, Evictions: v.Evictions}
}

// countRequests records every request in the Prometheus HTTP metrics by route template and status.
func (s *Server) countRequests(c *fiber.Ctx) error {
	start := time.Now()
	err := c.Next()
	status := answeredStatus(c, err)
	s.Metrics.ObserveRequest(methodLabel(c.Method()), s.routeLabel(c, err), status, time.Since(start))
	return err
}

// methodLabel returns the method as one of the constant strings of the known methods, or
// "other". Never the request's own string: Fiber's c.Method() shares memory with a buffer the
// next request on the connection overwrites, which once turned GET into GETCH in the labels.
func methodLabel(m string) string {
	for _, known := range []string{fiber.MethodGet, fiber.MethodHead, fiber.MethodPost, fiber.MethodPut, fiber.MethodDelete,
		fiber.MethodOptions, fiber.MethodPatch, fiber.MethodTrace, fiber.MethodConnect} {
		if m == known {
			return known
		}
	}
	return "other"
}

// routeLabel returns the request's route template: a registered route's path, "<group>/*" for a
// request a group's middleware ended before routing (a 401 under /api is "/api/*"), or
// "unmatched".
func (s *Server) routeLabel(c *fiber.Ctx, err error) string {
	r := c.Route()
	switch {
	case err == errNoRoute:
		return routeUnmatched
	case s.routes[r.Path]:
		return r.Path
	case r.Path != "/" && s.groups[r.Path]:
		return r.Path + "/*"
	}
	return routeUnmatched
}

// metricsOperation declares GET /metrics (raw: the Prometheus text format 0.0.4, text/plain;
// version=0.0.4; charset=utf-8).
func (s *Server) metricsOperation(root huma.API) {
	registerRaw(root, op{Method: "GET", Path: "/metrics", Tag: "Operations", Summary: "Prometheus metrics (text format)",
		Sec: apidoc.Metrics, Errors: []int{401, 403},
		Desc: "With METRICS_TOKEN set: `Authorization: Bearer <METRICS_TOKEN>` is required. Without it: only direct loopback callers (no X-Forwarded-For or Forwarded header) are served."},
		map[string]*huma.Response{"200": {Description: "OK", Content: map[string]*huma.MediaType{
			"text/plain": {Schema: &huma.Schema{Type: huma.TypeString}}}}},
		s.serveMetrics)
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
