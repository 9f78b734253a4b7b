package events_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math/bits"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reelforge/reelforge/host/events"
	"github.com/reelforge/reelforge/host/store/pgstore"
	"github.com/reelforge/reelforge/host/store/storetest"
	"github.com/reelforge/reelforge/internal/testtool"
)

func recvFrame(t *testing.T, c *events.Client, wait time.Duration) map[string]any {
	t.Helper()
	select {
	case b := <-c.Send():
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("frame %s: %v", b, err)
		}
		return m
	case <-time.After(wait):
		return nil
	}
}

func TestHubSlowClientDroppedOthersServed(t *testing.T) {
	t.Parallel()
	h := events.NewHub(events.HubOptions{QueueSize: 4})
	slow, fast := h.Register("u1"), h.Register("u1")
	h.Subscribe(slow, "p1")
	h.Subscribe(fast, "p1")
	got := 0
	start := time.Now()
	for i := range 20 {
		h.Notify(context.Background(), events.Frame{ProjectID: "p1", Type: events.FrameTaskProgress, Data: map[string]any{"progress": i}})
		if recvFrame(t, fast, time.Second) != nil {
			got++
		}
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("20 notifications took %v with a stuck client, want no blocking", took)
	}
	if got != 20 {
		t.Errorf("fast client got %d frames, want 20", got)
	}
	select {
	case <-slow.Done():
	default:
		t.Errorf("the slow client was not dropped")
	}
	if clients, _ := h.Counts(); clients != 1 {
		t.Errorf("clients after the drop = %d, want 1", clients)
	}
}

func TestHubRouting(t *testing.T) {
	t.Parallel()
	h := events.NewHub(events.HubOptions{})
	a, b, other := h.Register("ua"), h.Register("ua"), h.Register("ub")
	h.Subscribe(a, "pa")
	tests := map[string]struct {
		frame                   events.Frame
		wantA, wantB, wantOther bool
	}{
		"project frame: its subscribers": {events.Frame{ProjectID: "pa", UserID: "ua", Type: "task:status"}, true, false, false},
		"user frame: the user's clients": {events.Frame{UserID: "ua", Type: "asset:sync"}, true, true, false},
		"another project: nobody":        {events.Frame{ProjectID: "px", UserID: "ua", Type: "task:status"}, false, false, false},
	}
	for name, tc := range tests { // not parallel: they share the clients
		h.Notify(context.Background(), tc.frame)
		for who, c := range map[string]struct {
			c    *events.Client
			want bool
		}{"a": {a, tc.wantA}, "b": {b, tc.wantB}, "other": {other, tc.wantOther}} {
			if got := recvFrame(t, c.c, 50*time.Millisecond) != nil; got != c.want {
				t.Errorf("%s: client %s received = %v, want %v", name, who, got, c.want)
			}
		}
	}
	h.Unsubscribe(a, "pa")
	h.Notify(context.Background(), events.Frame{ProjectID: "pa", Type: "task:status"})
	if recvFrame(t, a, 50*time.Millisecond) != nil {
		t.Errorf("frame after unsubscribe, want none")
	}
}

// memBus is an in-process Bus shared by several hubs.
type memBus struct {
	mu   sync.Mutex
	subs []chan string
}

func (m *memBus) Publish(_ context.Context, payload string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.subs {
		s <- payload
	}
	return nil
}

func (m *memBus) Listen(ctx context.Context, fn func(string)) error {
	ch := make(chan string, 100)
	m.mu.Lock()
	m.subs = append(m.subs, ch)
	m.mu.Unlock()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case p := <-ch:
			fn(p)
		}
	}
}

func checkAcrossHosts(t *testing.T, h1, h2 *events.Hub) {
	t.Helper()
	c1, c2 := h1.Register("u"), h2.Register("u")
	h1.Subscribe(c1, "p")
	h2.Subscribe(c2, "p")
	// The hubs listen to the bus: a probe frame sent through h1 reaches a client of h2's.
	probe := h2.Register("u")
	h2.Subscribe(probe, "probe")
	testtool.Eventually(t, 10*time.Second, "the hubs' listeners", func() bool {
		h1.Notify(context.Background(), events.Frame{ProjectID: "probe", Type: events.FrameTaskStatus, Data: map[string]any{"taskId": "probe"}})
		return recvFrame(t, probe, 100*time.Millisecond) != nil
	})
	h1.Notify(context.Background(), events.Frame{ProjectID: "p", Type: events.FrameTaskStatus, Data: map[string]any{"taskId": "t", "status": "running"}})
	if f := recvFrame(t, c1, 5*time.Second); f == nil || f["type"] != events.FrameTaskStatus {
		t.Errorf("client on the sending host got %v", f)
	}
	if f := recvFrame(t, c2, 5*time.Second); f == nil || f["data"].(map[string]any)["status"] != "running" {
		t.Errorf("client on the other host got %v", f)
	}
	if f := recvFrame(t, c1, 300*time.Millisecond); f != nil {
		t.Errorf("client on the sending host got the frame twice: %v", f)
	}
}

func TestHubAcrossHostsInMemory(t *testing.T) {
	t.Parallel()
	bus := &memBus{}
	h1, h2 := events.NewHub(events.HubOptions{Bus: bus}), events.NewHub(events.HubOptions{Bus: bus})
	for _, h := range []*events.Hub{h1, h2} {
		if err := h.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(h.Stop)
	}
	checkAcrossHosts(t, h1, h2)
}

// TestHubAcrossHostsPostgres: two hosts on one PostgreSQL database, LISTEN/NOTIFY between them.
func TestHubAcrossHostsPostgres(t *testing.T) {
	t.Parallel()
	url := storetest.PostgresURL(t)
	channel := "test_frames_" + storetest.SchemaName()
	var hubs []*events.Hub
	for range 2 {
		schema := storetest.SchemaName()
		d, err := pgstore.Open(context.Background(), url, pgstore.Options{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			d.Close()
			storetest.DropSchema(url, schema)
		})
		h := events.NewHub(events.HubOptions{Bus: events.StoreBus{PubSub: d, Channel: channel}})
		if err := h.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(h.Stop)
		hubs = append(hubs, h)
	}
	checkAcrossHosts(t, hubs[0], hubs[1])
}

// failingBus is a Bus whose Listen fails at once, as when the database is down.
type failingBus struct{ listens atomic.Int32 }

func (*failingBus) Publish(context.Context, string) error { return errors.New("down") }
func (b *failingBus) Listen(context.Context, func(string)) error {
	b.listens.Add(1)
	return errors.New("failed to connect: connection refused")
}

// TestListenerBacksOffQuietly: a listener whose bus keeps failing tries again with a growing
// back-off and logs once per doubling of the failures, not once per attempt.
func TestListenerBacksOffQuietly(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	bus := &failingBus{}
	h := events.NewHub(events.HubOptions{Bus: bus, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The back-off from 0.25 s: the 4th attempt comes after 1.5 to 2.6 s of waits in all.
	testtool.Eventually(t, time.Minute, "four attempts to listen", func() bool { return bus.listens.Load() >= 4 })
	h.Stop()
	n := int(bus.listens.Load())
	lines := strings.Count(logs.String(), "frame listener stopped")
	// The last attempt may have been cut short by Stop before its failure was counted.
	if most := bits.Len(uint(n)); lines < 2 || lines > most {
		t.Errorf("%d attempts logged %d lines, want 2 to %d (at the 1st, 2nd, 4th... failure):\n%s", n, lines, most, logs.String())
	}
}

// stalledBus is a Bus whose Publish waits until its context ends, as on a paused PostgreSQL.
type stalledBus struct{ publishes atomic.Int32 }

func (b *stalledBus) Publish(ctx context.Context, _ string) error {
	b.publishes.Add(1)
	<-ctx.Done()
	return ctx.Err()
}
func (*stalledBus) Listen(ctx context.Context, _ func(string)) error {
	<-ctx.Done()
	return ctx.Err()
}

// TestNotifyDoesNotWaitForTheBus: frames for the other hosts are queued and published apart, so
// a sender never waits for a stalled database (a frame's NOTIFY held a run's start for the
// whole of a 10 s pause); what the queue cannot hold is dropped and logged, rationed.
func TestNotifyDoesNotWaitForTheBus(t *testing.T) {
	t.Parallel()
	var logs testtool.Buffer
	bus := &stalledBus{}
	h := events.NewHub(events.HubOptions{Bus: bus, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer h.Stop()
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for i := range 3000 {
			h.Notify(context.Background(), events.Frame{ProjectID: "p1", Type: events.FrameTaskProgress, Data: map[string]any{"progress": i}})
		}
	}()
	testtool.Eventually(t, 10*time.Second, "3000 frames sent past a stalled bus", func() bool {
		select {
		case <-sent:
			return true
		default:
			return false
		}
	})
	if bus.publishes.Load() == 0 {
		t.Error("no frame was published")
	}
	if lines := strings.Count(logs.String(), "frame not sent to other hosts"); lines == 0 || lines > 12 {
		t.Errorf("about 2000 frames dropped logged %d lines, want a few:\n%s", lines, logs.String())
	}
}
