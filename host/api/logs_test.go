package api_test

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/reelforge/reelforge/host/api"
	"github.com/reelforge/reelforge/host/auth"
	"github.com/reelforge/reelforge/host/config"
	"github.com/reelforge/reelforge/internal/testtool"
)

// TestLogsHoldNoSecrets runs the auth flows with a debug-level JSON log and greps the log for the
// password, the tokens and the configured secrets: none may appear. Every request line carries
// request id, route, status and latency.
func TestLogsHoldNoSecrets(t *testing.T) {
	t.Parallel()
	const (
		password       = "Sup3r-Secret-Passw0rd"
		wrongPassword  = "Wr0ng-Secret-Passw0rd"
		jwtSecret      = "jwt-secret-0123456789abcdef0123456789abcdef"
		callbackSecret = "callback-secret-0123456789abcdef0123456789"
		metricsToken   = "metrics-token-0123456789abcdef"
	)
	var logs testtool.Buffer
	cfg := config.Defaults()
	cfg.JWTSecret, cfg.CallbackSecret, cfg.MetricsToken = jwtSecret, callbackSecret, metricsToken
	cfg.DataDir = t.TempDir()
	st := drivers()[0].open(t)
	s := &api.Server{Config: &cfg, Store: st, Auth: auth.New(st, cfg.JWTSecret, bcrypt.MinCost),
		Log: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	b := &testBundle{t: t, app: s.App(), st: st}

	reg := b.do("POST", "/api/auth/register", "", map[string]any{"email": "lee@example.com", "password": password, "username": "lee"})
	if reg.status != 201 {
		t.Fatalf("register = %d %s", reg.status, reg.raw)
	}
	login := b.do("POST", "/api/auth/login", "", map[string]any{"email": "lee@example.com", "password": password})
	if login.status != 200 {
		t.Fatalf("login = %d %s", login.status, login.raw)
	}
	refresh := login.data("refreshToken").(string)
	ref := b.do("POST", "/api/auth/refresh", "", map[string]any{"refreshToken": refresh})
	if ref.status != 200 {
		t.Fatalf("refresh = %d %s", ref.status, ref.raw)
	}
	if bad := b.do("POST", "/api/auth/login", "", map[string]any{"email": "lee@example.com", "password": wrongPassword}); bad.status != 401 {
		t.Fatalf("failing login = %d %s", bad.status, bad.raw)
	}
	b.do("POST", "/api/auth/refresh", "", map[string]any{"refreshToken": refresh}) // reuse: revokes the family
	b.do("GET", "/api/auth/me", ref.data("token").(string), nil)
	b.do("GET", "/api/auth/me", reg.data("token").(string)+"tampered", nil)
	b.do("POST", "/api/auth/login", "", `{"email": "lee@example.com", "password": "`+password) // malformed JSON
	b.do("GET", "/metrics", "", nil, "Authorization", "Bearer "+metricsToken)

	secrets := map[string]string{
		"password": password, "wrong password": wrongPassword, "JWT_SECRET": jwtSecret, "CALLBACK_SECRET": callbackSecret,
		"METRICS_TOKEN": metricsToken, "refresh token": refresh, "rotated refresh token": ref.data("refreshToken").(string),
		"register token": reg.data("token").(string), "login token": login.data("token").(string), "refreshed token": ref.data("token").(string),
	}
	out := logs.String()
	for name, v := range secrets {
		if strings.Contains(out, v) {
			t.Errorf("the log holds the %s", name)
		}
		// A JWT's signature alone (its third part) must not leak either.
		if parts := strings.Split(v, "."); len(parts) == 3 && strings.Contains(out, parts[2]) {
			t.Errorf("the log holds the signature of the %s", name)
		}
	}
	requests := 0
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		if rec["msg"] != "request" {
			continue
		}
		requests++
		for _, k := range []string{"request_id", "method", "route", "status", "latency_ms", "user_id"} {
			if _, ok := rec[k]; !ok {
				t.Errorf("request line without %s: %s", k, line)
			}
		}
	}
	if requests != 9 {
		t.Errorf("%d request lines, want 9:\n%s", requests, out)
	}
}
