package outbound_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/reelforge/reelforge/internal/outbound"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

func TestToolWithDefaults(t *testing.T) {
	t.Parallel()
	got := outbound.Tool{URL: "http://tool.test//"}.WithDefaults(7 * time.Second)
	if got.URL != "http://tool.test" || got.Timeout != 7*time.Second || got.HTTPClient == nil || got.Logger == nil || got.Now == nil {
		t.Errorf("WithDefaults() = %+v; want the URL trimmed and every field set", got)
	}
	if kept := (outbound.Tool{Timeout: time.Second}).WithDefaults(7 * time.Second); kept.Timeout != time.Second {
		t.Errorf("WithDefaults() Timeout = %v; want the one set, 1s", kept.Timeout)
	}
}

func TestToolHealth(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNotFound) }))
	t.Cleanup(up.Close)
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	healthy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/ping" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte("pong"))
	}))
	t.Cleanup(healthy.Close)
	tests := map[string]struct {
		url, path string
		want      errcode.Code
		answers   bool // engine.ToolAnswers: the tool is up but not healthy
	}{
		"not set":                       {"", "", errcode.Validation, false},
		"does not answer":               {down.URL, "", errcode.GraphRunner, false},
		"answers, no health route":      {up.URL, "", "", false},
		"404 at its health route":       {up.URL, "/health", errcode.GraphRunner, true},
		"2xx at its health route":       {healthy.URL, "/api/v1/ping", "", false},
		"health route, does not answer": {down.URL, "/ok", errcode.GraphRunner, false},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tool := outbound.Tool{URL: tt.url, HealthPath: tt.path}.WithDefaults(time.Second)
			err := tool.Health(t.Context(), "test.Health", errcode.GraphRunner, "url is not set", "the tool does not answer")
			if got := errcode.Of(err); got != tt.want || (tt.want == "") != (err == nil) {
				t.Errorf("Health() = %v (code %q), want code %q", err, got, tt.want)
			}
			if got := engine.ToolAnswers(err); got != tt.answers {
				t.Errorf("ToolAnswers(%v) = %t, want %t", err, got, tt.answers)
			}
		})
	}
}
