package events

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/internal/backoff"
)

// Headers of an outbound delivery (SPEC.md Authentication 5).
const (
	HeaderSignature = "X-Webhook-Signature" // hex HMAC-SHA256 of the exact body with the shared secret
	HeaderTimestamp = "X-Timestamp"         // Unix milliseconds when the request was sent
	HeaderEventType = "X-Event-Type"        // the payload's event
	HeaderEventID   = "X-Event-Id"          // the payload's id, so receivers can drop repeats cheaply
)

// Sign returns the hex HMAC-SHA256 of body with secret: the X-Webhook-Signature value.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Verify reports whether signature is the hex HMAC-SHA256 of body with secret (receivers' side),
// comparing in constant time.
func Verify(secret string, body []byte, signature string) bool {
	want, err := hex.DecodeString(signature)
	if err != nil {
		return false
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hmac.Equal(m.Sum(nil), want)
}

// WorkerStore is what the delivery worker needs of the store.
type WorkerStore interface {
	ClaimOutboxEvents(ctx context.Context, p *store.ClaimOutboxParams) ([]*store.OutboxEvent, error)
	FinishOutboxEvent(ctx context.Context, p *store.FinishOutboxParams) error
	CountOutbox(ctx context.Context) (*store.OutboxCounts, error)
	PruneOutbox(ctx context.Context, before time.Time) (int64, error)
}

// WorkerConfig configures delivery. Zero durations take the defaults noted.
type WorkerConfig struct {
	URL           string        // AUTOMATION_EVENT_WEBHOOK_URL
	Secret        string        // AUTOMATION_WEBHOOK_SECRET
	Enabled       bool          // AUTOMATION_ENABLE_NOTIFICATIONS
	Timeout       time.Duration // AUTOMATION_NOTIFICATION_TIMEOUT per request (5 s)
	BatchSize     int           // AUTOMATION_BATCH_SIZE (10)
	Interval      time.Duration // AUTOMATION_BATCH_INTERVAL (5 s)
	EnabledEvents []string      // empty: every event
	// Lease is what a claimed batch is held for beyond one request's Timeout (the events of a
	// batch are posted at once): a host that dies with a batch in hand holds it no longer
	// (LEASE_MS). 0: the batch's requests one after another, plus 30 s.
	Lease      time.Duration
	MaxAge     time.Duration // retry for this long after the event was stored, then dead (24 h)
	MinBackoff time.Duration // first retry delay, doubling (1 s)
	MaxBackoff time.Duration // cap of the retry delay (5 min)
	// Retention is how long delivered and skipped events are kept (7 days); dead ones stay.
	Retention time.Duration
	// SignURLs, when set, rewrites a payload as it is posted: the host's file URLs in it are
	// signed then (fileurl.Signer.SignJSON), so a retried event carries URLs fresh at its
	// delivery, and the outbox keeps the plain ones.
	SignURLs func([]byte) []byte
	Client   *http.Client // nil: one with Timeout
	Log      *slog.Logger
	Now      func() time.Time // nil: time.Now
}

// Worker delivers the outbox to the webhook receiver: claim a batch, post each event signed,
// record the outcome; failures are retried with exponential back-off until MaxAge, then dead.
// Everything is in the outbox table, so a restart loses nothing; several hosts may run workers
// on one database (claims are leased). Status and Test are safe for concurrent use.
type Worker struct {
	st      WorkerStore
	cfg     WorkerConfig
	enabled map[string]bool
	client  *http.Client
	log     *slog.Logger
	now     func() time.Time

	mu      sync.Mutex
	cancel  context.CancelFunc
	done    chan struct{}
	lastErr string
}

// NewWorker returns a worker; Start runs it.
func NewWorker(st WorkerStore, cfg WorkerConfig) *Worker {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.BatchSize < 1 {
		cfg.BatchSize = 10
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 5 * time.Second
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = 24 * time.Hour
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = time.Second
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 5 * time.Minute
	}
	if cfg.Retention <= 0 {
		cfg.Retention = 7 * 24 * time.Hour
	}
	w := &Worker{st: st, cfg: cfg, client: cfg.Client, log: cfg.Log, now: cfg.Now}
	if w.client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = max(cfg.BatchSize, 2)
		w.client = &http.Client{Timeout: cfg.Timeout, Transport: tr}
	}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	if w.now == nil {
		w.now = time.Now
	}
	if len(cfg.EnabledEvents) > 0 {
		w.enabled = map[string]bool{}
		for _, e := range cfg.EnabledEvents {
			w.enabled[e] = true
		}
	}
	return w
}

// Active reports whether the worker delivers: notifications on and a target set.
func (w *Worker) Active() bool { return w.cfg.Enabled && w.cfg.URL != "" }

// Start runs the delivery loop until ctx ends or Stop is called. With notifications off (or no
// target) it does nothing: events stay pending in the outbox.
func (w *Worker) Start(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done != nil {
		return errors.New("events: worker already started")
	}
	if !w.Active() {
		if w.cfg.Enabled {
			w.log.Warn("event notifications on but AUTOMATION_EVENT_WEBHOOK_URL is empty: nothing is delivered")
		}
		return nil
	}
	ctx, w.cancel = context.WithCancel(ctx)
	w.done = make(chan struct{})
	go w.loop(ctx, w.done)
	return nil
}

// Stop ends the loop and waits for the batch in flight (its outcomes are recorded; an event cut
// short is retried after its lease).
func (w *Worker) Stop() {
	w.mu.Lock()
	cancel, done := w.cancel, w.done
	w.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}

// loop delivers a batch every Interval; while batches come back full it goes on at once, so a
// backlog (a receiver that was down) drains at the receiver's pace instead of BatchSize per Interval.
// It exits when ctx ends.
func (w *Worker) loop(ctx context.Context, done chan struct{}) {
	defer close(done)
	t := time.NewTimer(0)
	defer t.Stop()
	var pruned time.Time
	retry := backoff.Retry{Log: w.log, What: "events: delivery batch"}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if now := w.now(); now.Sub(pruned) >= time.Hour {
			pruned = now
			if n, err := w.st.PruneOutbox(ctx, now.Add(-w.cfg.Retention)); err != nil {
				w.log.Warn("events: prune outbox", "err", err.Error())
			} else if n > 0 {
				w.log.Info("events: pruned delivered events", "count", n)
			}
		}
		wait := w.cfg.Interval
		for ctx.Err() == nil {
			n, err := w.RunBatch(ctx)
			if err != nil {
				if ctx.Err() == nil {
					wait = retry.Failed(err) // the database failing: its back-off, not the interval
				}
				break
			}
			retry.Succeeded()
			if n < w.cfg.BatchSize {
				break
			}
		}
		t.Reset(wait)
	}
}

// lease is how long a claimed batch is held: its requests go at once, each within Timeout.
func (w *Worker) lease() time.Duration {
	if w.cfg.Lease > 0 {
		return w.cfg.Timeout + w.cfg.Lease
	}
	return time.Duration(w.cfg.BatchSize)*w.cfg.Timeout + 30*time.Second
}

// RunBatch claims and delivers one batch and returns how many events it claimed. The events of
// a batch are posted concurrently, one event per request.
func (w *Worker) RunBatch(ctx context.Context) (int, error) {
	tok := uuid.NewString()
	evs, err := w.st.ClaimOutboxEvents(ctx, &store.ClaimOutboxParams{Limit: w.cfg.BatchSize, Token: tok, Lease: w.lease()})
	if err != nil {
		return 0, err
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var unrecorded []*store.FinishOutboxParams
	for _, e := range evs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if fin := w.deliverOne(ctx, e, tok); fin != nil {
				mu.Lock()
				unrecorded = append(unrecorded, fin)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	w.recordOutcomes(ctx, unrecorded)
	return len(evs), nil
}

// recordOutcomes records the outcomes the database refused when their deliveries ended (it was
// down, or its disk full), trying again with the host's back-off until each is recorded, the
// claim is gone (ErrStale: another host has the event now) or the worker stops. The batch waits
// for it, so this host claims nothing more meanwhile: an event sent is not sent again for want
// of its outcome once the database is back (as long as its claim has not lapsed before). After a
// stop, the claim lapses and the event is delivered again: at least once.
func (w *Worker) recordOutcomes(ctx context.Context, fins []*store.FinishOutboxParams) {
	retry := backoff.Retry{Log: w.log, What: "events: record delivery outcomes"}
	for len(fins) > 0 {
		err := fmt.Errorf("%d outcomes not recorded", len(fins))
		if !backoff.Sleep(ctx, retry.Failed(err)) {
			return
		}
		left := fins[:0]
		for _, fin := range fins {
			if err := w.st.FinishOutboxEvent(ctx, fin); err != nil && !errors.Is(err, store.ErrStale) && ctx.Err() == nil {
				left = append(left, fin)
			}
		}
		fins = left
	}
	retry.Succeeded()
}

// deliverOne delivers e (claimed with tok) and records its outcome; it returns the outcome when
// the database refused it, for recordOutcomes.
func (w *Worker) deliverOne(ctx context.Context, e *store.OutboxEvent, tok string) *store.FinishOutboxParams {
	fin := &store.FinishOutboxParams{ID: e.ID, Token: tok}
	if w.enabled != nil && !w.enabled[e.Event] {
		fin.Status = store.OutboxSkipped
	} else {
		payload := e.Payload
		if w.cfg.SignURLs != nil {
			payload = w.cfg.SignURLs(payload)
		}
		status, _, err := w.post(ctx, e.Event, e.ID, payload)
		if err == nil {
			fin.Status = store.OutboxDelivered
		} else {
			if ctx.Err() != nil {
				// Shutting down: hand the event back at once, so that another host (or the next
				// start) delivers it without waiting for this claim's lease to run out.
				hb := &store.FinishOutboxParams{ID: e.ID, Token: tok, Status: store.OutboxPending, HandBack: true}
				if err := w.st.FinishOutboxEvent(context.WithoutCancel(ctx), hb); err != nil && !errors.Is(err, store.ErrStale) {
					w.log.Warn("events: hand an event back", "event_id", e.ID, "err", err.Error())
				}
				return nil
			}
			w.setLastErr(err.Error())
			now := w.now()
			fin.Error = err.Error()
			if now.Sub(e.CreatedAt) >= w.cfg.MaxAge {
				fin.Status = store.OutboxDead
				w.log.Warn("events: delivery gave up", "event_id", e.ID, "event", e.Event, "attempts", e.Attempts+1, "err", fin.Error)
			} else {
				fin.Status = store.OutboxPending
				fin.RetryAt = now.Add(w.backoff(e.Attempts + 1))
				w.log.Info("events: delivery failed, will retry", "event_id", e.ID, "event", e.Event, "status", status,
					"retry_at", fin.RetryAt, "err", fin.Error)
			}
		}
	}
	if err := w.st.FinishOutboxEvent(context.WithoutCancel(ctx), fin); err != nil {
		if errors.Is(err, store.ErrStale) {
			return nil // the claim lapsed and another host has the event now
		}
		w.log.Warn("events: record delivery outcome", "event_id", e.ID, "err", err.Error())
		return fin
	}
	return nil
}

// backoff is MinBackoff doubled per earlier failure, capped at MaxBackoff.
func (w *Worker) backoff(failures int) time.Duration {
	d := w.cfg.MinBackoff
	for i := 1; i < failures && d < w.cfg.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, w.cfg.MaxBackoff)
}

// post sends one signed body; a 2xx answer is success.
func (w *Worker) post(ctx context.Context, event, id string, body []byte) (int, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return 0, 0, errors.New("events: AUTOMATION_EVENT_WEBHOOK_URL is not a valid URL")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderSignature, Sign(w.cfg.Secret, body))
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(time.Now().UnixMilli(), 10))
	req.Header.Set(HeaderEventType, event)
	req.Header.Set(HeaderEventID, id)
	start := time.Now()
	res, err := w.client.Do(req)
	took := time.Since(start)
	if err != nil {
		// The client's error quotes the URL, credentials in its user info or query included; what
		// is kept (outbox rows, notification-status, logs) must not repeat them.
		return 0, took, fmt.Errorf("events: post %s: %s", event, scrubURL(err.Error(), w.cfg.URL))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10)) // drain so the connection is reused
	res.Body.Close()
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return res.StatusCode, took, fmt.Errorf("events: receiver answered %d", res.StatusCode)
	}
	return res.StatusCode, took, nil
}

func (w *Worker) setLastErr(s string) {
	w.mu.Lock()
	w.lastErr = s
	w.mu.Unlock()
}

// Status is the queue state of notification-status.
type Status struct {
	Enabled         bool     `json:"enabled"`
	Target          string   `json:"target"`
	Pending         int      `json:"pending"`   // not delivered yet: new, or waiting for a retry
	Delivered       int      `json:"delivered"` // kept for Retention (7 days), then pruned
	Failed          int      `json:"failed"`    // of pending, those waiting for a retry after a failed attempt
	Dead            int      `json:"dead"`
	Skipped         int      `json:"skipped"` // filtered out by AUTOMATION_ENABLED_EVENTS
	LastError       *string  `json:"last_error"`
	LastErrorAt     *string  `json:"last_error_at"`
	BatchSize       int      `json:"batch_size"`
	BatchIntervalMS int64    `json:"batch_interval_ms"`
	TimeoutMS       int64    `json:"timeout_ms"`
	EnabledEvents   []string `json:"enabled_events"` // empty: all
}

// Status counts the outbox by state and reports the configuration.
func (w *Worker) Status(ctx context.Context) (*Status, error) {
	c, err := w.st.CountOutbox(ctx)
	if err != nil {
		return nil, err
	}
	s := &Status{Enabled: w.Active(), Target: Target(w.cfg.URL), Pending: c.Pending + c.Failed, Delivered: c.Delivered, Failed: c.Failed,
		Dead: c.Dead, Skipped: c.Skipped, BatchSize: w.cfg.BatchSize, BatchIntervalMS: w.cfg.Interval.Milliseconds(),
		TimeoutMS: w.cfg.Timeout.Milliseconds(), EnabledEvents: append([]string{}, w.cfg.EnabledEvents...)}
	if c.LastError != "" {
		le := scrubURL(c.LastError, w.cfg.URL) // rows written before errors were scrubbed
		s.LastError = &le
		if c.LastErrorAt != nil {
			at := c.LastErrorAt.UTC().Format(time.RFC3339Nano)
			s.LastErrorAt = &at
		}
	} else {
		w.mu.Lock()
		if w.lastErr != "" {
			le := w.lastErr
			s.LastError = &le
		}
		w.mu.Unlock()
	}
	return s, nil
}

// Target is what notification-status shows of the receiver's URL: scheme, host, port and path,
// never its user info, query or fragment (they may hold credentials).
func Target(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}).String()
}

// scrubURL replaces in msg the parts of raw (the receiver's URL) that may hold credentials: the
// whole URL, its user name, password, query and fragment.
func scrubURL(msg, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return strings.ReplaceAll(msg, raw, "[receiver]")
	}
	msg = strings.ReplaceAll(msg, raw, Target(raw))
	var secrets []string
	if u.User != nil {
		secrets = append(secrets, u.User.String(), u.User.Username())
		if pw, ok := u.User.Password(); ok {
			secrets = append(secrets, pw, url.QueryEscape(pw))
		}
	}
	secrets = append(secrets, u.RawQuery, u.Query().Encode(), u.Fragment, u.EscapedFragment())
	for _, v := range u.Query() {
		secrets = append(secrets, v...)
	}
	for _, sec := range secrets {
		if len(sec) >= 3 { // a shorter piece would blot out ordinary words
			msg = strings.ReplaceAll(msg, sec, "***")
		}
	}
	return msg
}

// TestResult is the answer of test-notification.
type TestResult struct {
	Delivered  bool    `json:"delivered"`
	StatusCode int     `json:"status_code"`
	LatencyMS  float64 `json:"latency_ms"`
	Error      string  `json:"error,omitempty"`
	EventID    string  `json:"event_id"`
}

// Test posts a signed test event {id, event, timestamp, data: {test: true}, meta} to the target
// at once, outside the outbox, and reports how the receiver answered. It sends even when
// notifications are off, as a connection test.
func (w *Worker) Test(ctx context.Context, event string) *TestResult {
	p := Payload{ID: uuid.NewString(), Event: event, Timestamp: time.Now().UTC().Format(time.RFC3339Nano),
		Data: map[string]any{"test": true}, Meta: Meta{Source: Source, Version: Version}}
	res := &TestResult{EventID: p.ID}
	if w.cfg.URL == "" {
		res.Error = "AUTOMATION_EVENT_WEBHOOK_URL is not set"
		return res
	}
	body, err := json.Marshal(p)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	status, took, err := w.post(ctx, event, p.ID, body)
	res.StatusCode = status
	res.LatencyMS = float64(took.Microseconds()) / 1000
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.Delivered = true
	return res
}
