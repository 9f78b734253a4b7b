package app

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/reelforge/reelforge/host/config"
	"github.com/reelforge/reelforge/host/events"
	"github.com/reelforge/reelforge/host/store"
)

// TestEventsWiredFromConfig: an event emitted in a transaction reaches the configured receiver,
// signed with the configured secret, and the API's Notifier is the hub.
func TestEventsWiredFromConfig(t *testing.T) {
	t.Parallel()
	got := make(chan *http.Request, 4)
	bodies := make(chan []byte, 4)
	rec := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- r
		bodies <- b
	}))
	defer rec.Close()
	cfg, err := config.LoadFrom(func(k string) (string, bool) {
		v, ok := map[string]string{
			"DATA_DIR": t.TempDir(), "AUTOMATION_EVENT_WEBHOOK_URL": rec.URL + "/events", "AUTOMATION_WEBHOOK_SECRET": "sec",
			"AUTOMATION_ENABLE_NOTIFICATIONS": "true", "AUTOMATION_BATCH_SIZE": "1", "AUTOMATION_BATCH_INTERVAL": "50",
		}[k]
		return v, ok
	})
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(t.Context(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Store.Close()
	if h.Server.Notifier != events.Notifier(h.Hub) || h.Server.Notifications == nil {
		t.Fatalf("api.Server lacks the hub or the worker")
	}
	if err := h.startEvents(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer h.stopEvents()
	err = h.Store.InTx(t.Context(), func(tx store.Driver) error {
		return events.Emit(context.Background(), tx, events.Event{Name: events.TaskAssetUploaded, Data: map[string]any{"assetId": "a1"}})
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		body := <-bodies
		if r.URL.Path != "/events" || r.Header.Get(events.HeaderEventType) != events.TaskAssetUploaded ||
			!events.Verify("sec", body, r.Header.Get(events.HeaderSignature)) || r.Header.Get(events.HeaderTimestamp) == "" {
			t.Errorf("delivery %s %v with body %s is not as configured", r.URL.Path, r.Header, body)
		}
		var p map[string]any
		if err := json.Unmarshal(body, &p); err != nil || p["event"] != events.TaskAssetUploaded {
			t.Errorf("body %s: %v", body, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no delivery within 10 s")
	}
	st, err := h.Events.Status(t.Context())
	if err != nil || st.BatchSize != 1 || st.BatchIntervalMS != 50 || st.Target != rec.URL+"/events" {
		t.Errorf("Status = %+v, %v", st, err)
	}
}
