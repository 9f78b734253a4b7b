package api_test

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"golang.org/x/crypto/bcrypt"

	"github.com/reelforge/reelforge/host/api"
	"github.com/reelforge/reelforge/host/auth"
	"github.com/reelforge/reelforge/host/config"
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
	s := &api.Server{Config: &cfg, Store: st, Auth: auth.New(st, cfg.JWTSecret, bcrypt.MinCost), Log: slog.New(slog.DiscardHandler)}
	app := s.App()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go app.Listener(ln) //nolint:errcheck // ends with Shutdown below
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
		"reelforge_db_pool_max_connections", "reelforge_db_pool_connections", "go_goroutines"} {
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
