package api_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"golang.org/x/crypto/bcrypt"

	"github.com/reelforge/reelforge/host/api"
	"github.com/reelforge/reelforge/host/auth"
	"github.com/reelforge/reelforge/host/config"
	"github.com/reelforge/reelforge/host/kb"
	"github.com/reelforge/reelforge/internal/testtool"
)

func TestMetricsAccess(t *testing.T) {
	t.Parallel()
	open := drivers()[0].open
	tests := map[string]struct {
		token      string // METRICS_TOKEN
		auth       string // Authorization header sent
		wantStatus int
		wantCode   string
	}{
		// app.Test's connection comes from 0.0.0.0, which is not loopback.
		"no token, not loopback":   {"", "", 403, "AUTHORIZATION_ERROR"},
		"token, none sent":         {"s3cret-metrics", "", 401, "AUTHENTICATION_ERROR"},
		"token, wrong one sent":    {"s3cret-metrics", "Bearer nope", 401, "AUTHENTICATION_ERROR"},
		"token, user jwt sent":     {"s3cret-metrics", "Bearer eyJhbGciOi.x.y", 401, "AUTHENTICATION_ERROR"},
		"token, right one sent":    {"s3cret-metrics", "Bearer s3cret-metrics", 200, ""},
		"token, right one no type": {"s3cret-metrics", "s3cret-metrics", 401, "AUTHENTICATION_ERROR"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, open, func(c *config.Config) { c.MetricsToken = tt.token })
			var hdr []string
			if tt.auth != "" {
				hdr = []string{"Authorization", tt.auth}
			}
			r := b.do("GET", "/metrics", "", nil, hdr...)
			if r.status != tt.wantStatus || r.code() != tt.wantCode {
				t.Errorf("GET /metrics = %d %q, want %d %q (%s)", r.status, r.code(), tt.wantStatus, tt.wantCode, r.raw)
			}
		})
	}
}

// TestMetricsScrape serves the app on a loopback listener (no METRICS_TOKEN), makes a few
// requests, and parses the scrape with the Prometheus text parser.
func TestMetricsScrape(t *testing.T) {
	t.Parallel()
	cfg := config.Defaults()
	cfg.JWTSecret = "test-secret-test-secret-test-secret"
	cfg.DataDir = t.TempDir()
	st := drivers()[0].open(t)
	s := &api.Server{Config: &cfg, Store: st, Auth: auth.New(st, cfg.JWTSecret, bcrypt.MinCost), Log: slog.New(slog.DiscardHandler),
		KB: kb.New(st, kb.Options{})}
	app := s.App()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go app.Listener(ln) // ends with Shutdown below
	t.Cleanup(func() { _ = app.Shutdown() })
	base := "http://" + ln.Addr().String()
	get := func(path string, hdr ...string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), "GET", base+path, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res, string(body)
	}
	get("/health")
	get("/api/projects/11111111-1111-1111-1111-111111111111") // 401: refused by the /api group
	for i := range 3 {
		get(fmt.Sprintf("/no/such/path/%d", i))
	}
	if res, body := get("/metrics", "X-Forwarded-For", "203.0.113.9"); res.StatusCode != 403 {
		t.Errorf("GET /metrics relayed by a proxy = %d, want 403 (%s)", res.StatusCode, body)
	}
	res, body := get("/metrics")
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET /metrics from loopback = %d %q: %s", res.StatusCode, res.Header.Get("Content-Type"), body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse exposition: %v", err)
	}
	got := map[string]float64{}
	for _, m := range mfs["reelforge_http_requests_total"].GetMetric() {
		var ls []string
		for _, l := range m.GetLabel() {
			ls = append(ls, l.GetName()+"="+l.GetValue())
		}
		got[strings.Join(ls, ",")] = m.GetCounter().GetValue()
	}
	for key, want := range map[string]float64{
		"method=GET,route=/health,status=200":   1,
		"method=GET,route=unmatched,status=404": 3,
		"method=GET,route=/metrics,status=403":  1,
	} {
		if got[key] != want {
			t.Errorf("http_requests_total{%s} = %v, want %v (all: %v)", key, got[key], want, got)
		}
	}
	for key := range got {
		if strings.Contains(key, "/no/such") || strings.Contains(key, "1111") {
			t.Errorf("a raw path became a label: %s", key)
		}
	}
	for _, fam := range []string{"reelforge_http_request_duration_seconds", "reelforge_outbox_events",
		"reelforge_db_pool_max_connections", "reelforge_db_pool_connections", "go_goroutines",
		"reelforge_knowledge_vector_cache_bytes", "reelforge_knowledge_vector_cache_evictions_total"} {
		if _, ok := mfs[fam]; !ok {
			t.Errorf("family %s missing from the scrape", fam)
		}
	}
}

type fakeEngines struct{}

func (fakeEngines) EngineStates() map[string]string {
	return map[string]string{"graph": "degraded", "node": "ready"}
}
func (fakeEngines) EngineRestarts() map[string]int { return map[string]int{"graph": 3} }

// TestMetricsEngines: the engine states and restarts the Server's Engines report are scraped.
func TestMetricsEngines(t *testing.T) {
	t.Parallel()
	cfg := config.Defaults()
	cfg.JWTSecret = "test-secret-test-secret-test-secret"
	cfg.DataDir = t.TempDir()
	cfg.MetricsToken = "tok"
	st := drivers()[0].open(t)
	s := &api.Server{Config: &cfg, Store: st, Auth: auth.New(st, cfg.JWTSecret, bcrypt.MinCost), Log: slog.New(slog.DiscardHandler),
		Engines: fakeEngines{}}
	b := &testBundle{t: t, app: s.App(), st: st}
	r := b.do("GET", "/metrics", "tok", nil)
	for _, line := range []string{
		`reelforge_engine_state{engine="graph",state="degraded"} 1`,
		`reelforge_engine_state{engine="graph",state="ready"} 0`,
		`reelforge_engine_state{engine="node",state="ready"} 1`,
		`reelforge_engine_restarts_total{engine="graph"} 3`,
	} {
		if !strings.Contains(r.raw, line+"\n") {
			t.Errorf("scrape lacks %q", line)
		}
	}
}

// TestMetricsLabelsEveryMethod sends every HTTP method (and one no server knows) on one kept-alive
// connection, the way a client reusing connections does, and checks the scrape: each method label
// is a known method or "other", each route label a registered template or "unmatched", the counts
// add up, and promtool (when installed; CI installs it) finds nothing to lint.
func TestMetricsLabelsEveryMethod(t *testing.T) {
	t.Parallel()
	cfg := config.Defaults()
	cfg.JWTSecret = "test-secret-test-secret-test-secret"
	cfg.DataDir = t.TempDir()
	st := drivers()[0].open(t)
	s := &api.Server{Config: &cfg, Store: st, Auth: auth.New(st, cfg.JWTSecret, bcrypt.MinCost), Log: slog.New(slog.DiscardHandler),
		KB: kb.New(st, kb.Options{})}
	app := s.App()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go app.Listener(ln) // ends with Shutdown below
	t.Cleanup(func() { _ = app.Shutdown() })

	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	methods := []string{"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "TRACE", "PATCH", "PURGE"}
	paths := []string{"/health", "/api/projects", "/api/projects/11111111-1111-1111-1111-111111111111", "/no/such/path"}
	for _, m := range methods {
		for _, p := range paths {
			fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n", m, p)
			res, err := http.ReadResponse(br, &http.Request{Method: m})
			if err != nil {
				t.Fatalf("%s %s: %v", m, p, err)
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
	}
	res, err := http.Get("http://" + ln.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parse exposition: %v", err)
	}
	known := map[string]bool{"other": true}
	for _, m := range methods[:len(methods)-1] {
		known[m] = true
	}
	routes := map[string]bool{"unmatched": true, "/api/*": true}
	for _, r := range app.GetRoutes(true) {
		routes[r.Path] = true
	}
	perMethod := map[string]float64{}
	for _, m := range mfs["reelforge_http_requests_total"].GetMetric() {
		var method, route string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "method":
				method = l.GetValue()
			case "route":
				route = l.GetValue()
			}
		}
		if !known[method] || !routes[route] {
			t.Errorf("http_requests_total has method %q route %q: not a known method and route template", method, route)
		}
		perMethod[method] += m.GetCounter().GetValue()
	}
	for _, m := range methods[:len(methods)-1] { // Fiber answers an unknown method (PURGE) 501 before any handler
		want, label := float64(len(paths)), m
		if perMethod[label] != want {
			t.Errorf("requests counted under %s = %v, want %v (all: %v)", label, perMethod[label], want, perMethod)
		}
	}
	testtool.Need(t, "promtool")
	cmd := exec.CommandContext(t.Context(), "promtool", "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}
