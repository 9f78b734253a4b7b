package api

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/reelforge/reelforge/host/auth"
	"github.com/reelforge/reelforge/host/config"
	"github.com/reelforge/reelforge/host/events"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/sqlitestore"
	"github.com/reelforge/reelforge/host/store/storetest"
)

func TestNotificationRoutes(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []map[string]any
	rec := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if !events.Verify("hook-secret", b, r.Header.Get(events.HeaderSignature)) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var p map[string]any
		_ = json.Unmarshal(b, &p)
		mu.Lock()
		got = append(got, p)
		mu.Unlock()
	}))
	defer rec.Close()
	st, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "t.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg := config.Defaults()
	cfg.JWTSecret = "test-secret-test-secret-test-secret"
	worker := events.NewWorker(st, events.WorkerConfig{URL: rec.URL, Secret: "hook-secret", Enabled: true, BatchSize: 1,
		Interval: 200_000_000, EnabledEvents: []string{"a.b"}})
	s := &Server{Config: &cfg, Store: st, Auth: auth.New(st, cfg.JWTSecret, 4), Log: slog.New(slog.DiscardHandler), Notifications: worker}
	app := s.App()
	u := storetest.NewUser(t, st, store.RoleAdmin) // the routes are operators' (issue 37)
	tok, _ := s.Auth.IssueAccess(u)
	if err := events.Emit(context.Background(), st, events.Event{Name: "a.b"}); err != nil {
		t.Fatal(err)
	}

	call := func(method, path, token, body string) (int, map[string]any) {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := app.Test(req, -1)
		if err != nil {
			t.Fatal(err)
		}
		var out map[string]any
		_ = json.NewDecoder(res.Body).Decode(&out)
		data, _ := out["data"].(map[string]any)
		return res.StatusCode, data
	}

	tests := map[string]struct {
		method, path, token, body string
		wantStatus                int
		wantKeys                  []string
	}{
		"status needs a token": {"GET", "/api/webhooks/notification-status", "", "", 401, nil},
		"test needs a token":   {"POST", "/api/webhooks/test-notification", "", `{"event":"x"}`, 401, nil},
		"status": {"GET", "/api/webhooks/notification-status", tok, "", 200,
			[]string{"enabled", "target", "pending", "delivered", "failed", "dead", "last_error", "batch_size", "batch_interval_ms", "enabled_events"}},
		"test": {"POST", "/api/webhooks/test-notification", tok, `{"event":"acceptance.test"}`, 200,
			[]string{"delivered", "status_code", "latency_ms"}},
		"bad body": {"POST", "/api/webhooks/test-notification", tok, `{"event":5}`, 400, nil},
	}
	for name, tc := range tests { // sequential: they share the receiver
		status, data := call(tc.method, tc.path, tc.token, tc.body)
		if status != tc.wantStatus {
			t.Errorf("%s: status %d, want %d", name, status, tc.wantStatus)
		}
		for _, k := range tc.wantKeys {
			if _, ok := data[k]; !ok {
				t.Errorf("%s: data lacks %q: %v", name, k, data)
			}
		}
	}
	_, data := call("GET", "/api/webhooks/notification-status", tok, "")
	if data["pending"] != float64(1) || data["enabled"] != true || data["target"] != rec.URL || data["batch_interval_ms"] != float64(200) {
		t.Errorf("status = %v, want 1 pending, enabled, the target", data)
	}
	if _, err := worker.RunBatch(t.Context()); err != nil {
		t.Fatal(err)
	}
	_, data = call("GET", "/api/webhooks/notification-status", tok, "")
	if data["pending"] != float64(0) || data["delivered"] != float64(1) {
		t.Errorf("status after delivery = %v, want 1 delivered", data)
	}
	_, data = call("POST", "/api/webhooks/test-notification", tok, `{"event":"acceptance.test"}`)
	if data["delivered"] != true || data["status_code"] != float64(200) {
		t.Errorf("test-notification = %v, want delivered with 200", data)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) < 2 || got[len(got)-1]["event"] != "acceptance.test" || got[len(got)-1]["data"].(map[string]any)["test"] != true {
		t.Errorf("receiver got %v, want the test event last", got)
	}
}
