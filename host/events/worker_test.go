package events_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reelforge/reelforge/host/events"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/sqlitestore"
	"github.com/reelforge/reelforge/internal/testtool"
)

const secret = "s3cret-for-tests"

func openStore(t *testing.T) store.Driver {
	t.Helper()
	d, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "t.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func emit(t *testing.T, d store.Driver, name string) {
	t.Helper()
	err := d.InTx(context.Background(), func(tx store.Driver) error {
		e := events.Event{Name: name, Data: map[string]any{"n": 1}}
		if err := events.Emit(context.Background(), tx, e); err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Emit: %v", err)
	}
}

// receiver records the deliveries it accepted (answered 2xx before the sender gave up).
type receiver struct {
	mu       sync.Mutex
	accepted map[string]int
	bodies   []map[string]any
	badSig   int
	mode     atomic.Value // "down", "slow", "up"
	secret   string
	// refused counts requests answered 503 while down; cut the slow requests the worker gave up on.
	refused, cut atomic.Int32
}

func newReceiver(t *testing.T, secret string) (*receiver, *httptest.Server) {
	r := &receiver{accepted: map[string]int{}, secret: secret}
	r.mode.Store("up")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		switch r.mode.Load() {
		case "down":
			r.refused.Add(1)
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		case "slow":
			select {
			case <-time.After(1500 * time.Millisecond): // past the worker's timeout
			case <-req.Context().Done():
				r.cut.Add(1)
				return
			}
		}
		if !events.Verify(r.secret, body, req.Header.Get(events.HeaderSignature)) {
			r.mu.Lock()
			r.badSig++
			r.mu.Unlock()
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var p map[string]any
		if err := json.Unmarshal(body, &p); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if req.Context().Err() != nil {
			return
		}
		r.mu.Lock()
		r.accepted[p["id"].(string)]++
		r.bodies = append(r.bodies, p)
		r.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	return r, srv
}

func fastConfig(url string) events.WorkerConfig {
	// The timeout is generous so that a receiver that is up always answers within it, even on a
	// loaded CI machine; the slow receiver (1.5 s) always misses it.
	return events.WorkerConfig{URL: url, Secret: secret, Enabled: true, Timeout: time.Second, BatchSize: 4,
		Interval: 10 * time.Millisecond, MinBackoff: 10 * time.Millisecond, MaxBackoff: 80 * time.Millisecond}
}

func waitCounts(t *testing.T, d store.Driver, ok func(*store.OutboxCounts) bool) *store.OutboxCounts {
	t.Helper()
	var c *store.OutboxCounts
	if !testtool.Within(20*time.Second, func() bool {
		var err error
		if c, err = d.CountOutbox(context.Background()); err != nil {
			t.Fatalf("CountOutbox: %v", err)
		}
		return ok(c)
	}) {
		t.Fatalf("outbox never reached the wanted state: %+v", c)
	}
	return c
}

func TestWorkerDownSlowUpDeliversEachOnce(t *testing.T) {
	t.Parallel()
	d := openStore(t)
	rec, srv := newReceiver(t, secret)
	rec.mode.Store("down")
	w := events.NewWorker(d, fastConfig(srv.URL))
	if err := w.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	const n = 40
	for i := range n {
		emit(t, d, events.TaskCompleted)
		if i == n/2 {
			testtool.Eventually(t, 20*time.Second, "a delivery to the receiver while down", func() bool { return rec.refused.Load() > 0 })
			rec.mode.Store("slow")
		}
	}
	testtool.Eventually(t, 20*time.Second, "a delivery to the slow receiver to time out", func() bool { return rec.cut.Load() > 0 })
	c, _ := d.CountOutbox(context.Background())
	if c.Delivered != 0 || c.Failed == 0 {
		t.Errorf("while down and slow: counts %+v, want nothing delivered and failures", c)
	}
	rec.mode.Store("up")
	waitCounts(t, d, func(c *store.OutboxCounts) bool { return c.Delivered == n })
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.accepted) != n {
		t.Errorf("receiver accepted %d distinct events, want %d", len(rec.accepted), n)
	}
	for id, k := range rec.accepted {
		if k != 1 {
			t.Errorf("event %s accepted %d times, want once", id, k)
		}
	}
	for _, b := range rec.bodies {
		meta, _ := b["meta"].(map[string]any)
		if b["event"] != events.TaskCompleted || meta["source"] != events.Source || meta["version"] != events.Version || b["timestamp"] == "" {
			t.Errorf("delivered body %v lacks the payload fields", b)
			break
		}
	}
}

func TestWorkerBadSecretFailsVerification(t *testing.T) {
	t.Parallel()
	d := openStore(t)
	rec, srv := newReceiver(t, "not-the-secret")
	w := events.NewWorker(d, fastConfig(srv.URL))
	emit(t, d, events.JobCompleted)
	if n, err := w.RunBatch(t.Context()); err != nil || n != 1 {
		t.Fatalf("RunBatch = %d, %v; want 1 event", n, err)
	}
	rec.mu.Lock()
	bad, ok := rec.badSig, len(rec.accepted)
	rec.mu.Unlock()
	if bad != 1 || ok != 0 {
		t.Errorf("receiver with a wrong secret: %d bad signatures, %d accepted; want 1 and 0", bad, ok)
	}
	c, _ := d.CountOutbox(context.Background())
	if c.Failed != 1 || c.LastError == "" {
		t.Errorf("counts after a refused delivery = %+v, want 1 failed with the error", c)
	}
}

func TestSignVerify(t *testing.T) {
	t.Parallel()
	body := []byte(`{"id":"1","event":"x"}`)
	sig := events.Sign(secret, body)
	tests := map[string]struct {
		secret, sig string
		body        []byte
		want        bool
	}{
		"good":          {secret, sig, body, true},
		"wrong secret":  {"other", sig, body, false},
		"changed body":  {secret, sig, []byte(`{"id":"2","event":"x"}`), false},
		"not hex":       {secret, "zz", body, false},
		"empty":         {secret, "", body, false},
		"upper-case ok": {secret, toUpper(sig), body, true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := events.Verify(tc.secret, tc.body, tc.sig); got != tc.want {
				t.Errorf("Verify(%q) = %v, want %v", tc.sig, got, tc.want)
			}
		})
	}
}

func toUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'f' {
			b[i] = c - 32
		}
	}
	return string(b)
}

func TestWorkerFilterDeadStatusAndTest(t *testing.T) {
	t.Parallel()
	d := openStore(t)
	rec, srv := newReceiver(t, secret)
	cfg := fastConfig(srv.URL)
	cfg.EnabledEvents = []string{events.JobCompleted}
	cfg.MaxAge = 200 * time.Millisecond
	w := events.NewWorker(d, cfg)
	emit(t, d, events.JobCompleted)
	emit(t, d, events.ContentCreated) // filtered out: skipped, never sent
	if _, err := w.RunBatch(t.Context()); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	sent := len(rec.bodies)
	rec.mu.Unlock()
	if sent != 1 {
		t.Errorf("receiver got %d events, want 1 (the other is filtered out)", sent)
	}
	rec.mode.Store("down")
	emit(t, d, events.JobCompleted)
	if err := w.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	waitCounts(t, d, func(c *store.OutboxCounts) bool { return c.Dead == 1 })
	st, err := w.Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !st.Enabled || st.Target != srv.URL || st.Delivered != 1 || st.Skipped != 1 || st.Dead != 1 || st.Pending != 0 ||
		st.LastError == nil || st.BatchSize != 4 || st.BatchIntervalMS != 10 || len(st.EnabledEvents) != 1 {
		b, _ := json.Marshal(st)
		t.Errorf("Status = %s", b)
	}

	rec.mode.Store("up")
	res := w.Test(t.Context(), "acceptance.test")
	if !res.Delivered || res.StatusCode != 200 || res.Error != "" {
		t.Errorf("Test = %+v, want delivered with 200", res)
	}
	rec.mode.Store("down")
	if res := w.Test(t.Context(), "x"); res.Delivered || res.StatusCode != 503 || res.Error == "" {
		t.Errorf("Test(receiver down) = %+v, want 503 and an error", res)
	}
	if res := events.NewWorker(d, events.WorkerConfig{}).Test(t.Context(), "x"); res.Delivered || res.Error == "" {
		t.Errorf("Test(no target) = %+v, want an error", res)
	}
}

// TestStatusCountsEventsAwaitingRetry: an event whose delivery failed and waits for its retry is
// still pending (and failed tells how many of the pending failed once), not hidden from pending.
func TestStatusCountsEventsAwaitingRetry(t *testing.T) {
	t.Parallel()
	d := openStore(t)
	rec, srv := newReceiver(t, secret)
	cfg := fastConfig(srv.URL)
	cfg.MinBackoff, cfg.MaxBackoff = time.Hour, time.Hour // the retry waits while we look
	w := events.NewWorker(d, cfg)
	rec.mode.Store("down")
	emit(t, d, events.JobCompleted)
	emit(t, d, events.JobFailed)
	if _, err := w.RunBatch(t.Context()); err != nil {
		t.Fatal(err)
	}
	emit(t, d, events.JobStatusChanged) // new, never attempted
	st, err := w.Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st.Pending != 3 || st.Failed != 2 || st.Delivered != 0 || st.Dead != 0 || st.LastError == nil {
		b, _ := json.Marshal(st)
		t.Errorf("Status with two events awaiting a retry and one new = %s, want pending 3, failed 2, a last_error", b)
	}
}
