package events

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/internal/backoff"
)

// Bus carries frames between hosts that share a database (PostgreSQL LISTEN/NOTIFY). Publish
// reaches every host's Listen, the publisher's own included.
type Bus interface {
	Publish(ctx context.Context, payload string) error
	// Listen calls fn with each payload until ctx ends; it returns ctx's error or a connection error.
	Listen(ctx context.Context, fn func(payload string)) error
}

// HubOptions configure a Hub.
type HubOptions struct {
	// QueueSize is each client's send queue; a client whose queue is full is dropped (256).
	QueueSize int
	// Bus, when set, spreads frames to the clients of other hosts.
	Bus Bus
	Log *slog.Logger
	// SignURLs, when set, rewrites an encoded frame as it is sent to this host's clients: the
	// host's file URLs in it are signed then (fileurl.Signer.SignJSON), so a frame carries URLs
	// fresh at its delivery, and the bus carries the plain ones.
	SignURLs func([]byte) []byte
}

// Hub fans WebSocket frames out to the connections subscribed to a project (and, for frames
// without a project, to the owner's connections). Sending never blocks: each client has a bounded
// queue, and a client too slow to drain it is dropped without slowing the others. It is safe for
// concurrent use.
type Hub struct {
	queue int
	bus   Bus
	log   *slog.Logger
	sign  func([]byte) []byte
	host  string // this host's id on the bus, so it does not deliver its own frames twice

	mu        sync.RWMutex
	byProject map[string]map[*Client]struct{}
	byUser    map[string]map[*Client]struct{}

	// toBus holds the frames for the other hosts until the publisher (started by Start) sends
	// them: a request that sends a frame never waits for the database (PostgreSQL paused, a
	// frame's NOTIFY held a run's start for the whole 10 s). Full, it drops frames: they are
	// best effort, as for a slow client.
	toBus   chan string
	dropMu  sync.Mutex
	dropped backoff.Retry // rations the log of dropped and failed frames

	runMu  sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// busQueue is how many frames wait for the bus: a second of a busy host's frames.
const busQueue = 1024

// publishTimeout bounds one NOTIFY: a frame later than this is not worth its connection.
const publishTimeout = 2 * time.Second

var _ Notifier = (*Hub)(nil)

// NewHub returns an empty hub; Start runs its bus listener when it has a bus.
func NewHub(opt HubOptions) *Hub {
	if opt.QueueSize < 1 {
		opt.QueueSize = 256
	}
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	if opt.SignURLs == nil {
		opt.SignURLs = func(b []byte) []byte { return b }
	}
	return &Hub{queue: opt.QueueSize, bus: opt.Bus, log: opt.Log, sign: opt.SignURLs, host: uuid.NewString(),
		byProject: map[string]map[*Client]struct{}{}, byUser: map[string]map[*Client]struct{}{},
		toBus: make(chan string, busQueue), dropped: backoff.Retry{Log: opt.Log, What: "events: frame not sent to other hosts"}}
}

// Client is one connection's place in the hub: its user, its subscriptions and its send queue.
type Client struct {
	UserID   string
	send     chan []byte
	done     chan struct{}
	once     sync.Once
	projects map[string]struct{} // guarded by the hub's mu
}

// Send is the client's queue of encoded frames; the connection's writer drains it.
func (c *Client) Send() <-chan []byte { return c.send }

// Done is closed when the client is dropped (too slow) or unregistered.
func (c *Client) Done() <-chan struct{} { return c.done }

func (c *Client) close() { c.once.Do(func() { close(c.done) }) }

// Register adds a connection of userID.
func (h *Hub) Register(userID string) *Client {
	c := &Client{UserID: userID, send: make(chan []byte, h.queue), done: make(chan struct{}), projects: map[string]struct{}{}}
	h.mu.Lock()
	add(h.byUser, userID, c)
	h.mu.Unlock()
	return c
}

// Unregister removes c and closes its Done channel. It is idempotent.
func (h *Hub) Unregister(c *Client) {
	h.mu.Lock()
	remove(h.byUser, c.UserID, c)
	for p := range c.projects {
		remove(h.byProject, p, c)
	}
	c.projects = map[string]struct{}{}
	h.mu.Unlock()
	c.close()
}

// Subscribe adds c to the subscribers of projectID. The caller has checked ownership.
func (h *Hub) Subscribe(c *Client, projectID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-c.done:
		return // dropped meanwhile
	default:
	}
	c.projects[projectID] = struct{}{}
	add(h.byProject, projectID, c)
}

// Unsubscribe removes c from the subscribers of projectID.
func (h *Hub) Unsubscribe(c *Client, projectID string) {
	h.mu.Lock()
	delete(c.projects, projectID)
	remove(h.byProject, projectID, c)
	h.mu.Unlock()
}

// Counts reports the connections and the subscribed projects (for tests and health).
func (h *Hub) Counts() (clients, projects int) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for _, cs := range h.byUser {
		clients += len(cs)
	}
	return clients, len(h.byProject)
}

// SendTo queues one message for c alone (answers to its own requests); false when c was dropped.
func (h *Hub) SendTo(c *Client, v any) bool {
	b, err := json.Marshal(v)
	if err != nil {
		h.log.Error("events: encode frame", "err", err.Error())
		return false
	}
	return h.offer(c, h.sign(b))
}

// offer queues b for c without blocking; a full queue drops the client.
func (h *Hub) offer(c *Client, b []byte) bool {
	select {
	case <-c.done:
		return false
	default:
	}
	select {
	case c.send <- b:
		return true
	default:
		h.log.Warn("events: websocket client too slow, dropped", "user_id", c.UserID)
		h.Unregister(c)
		return false
	}
}

// wire is a frame on the bus.
type wire struct {
	Host      string         `json:"h"`
	ProjectID string         `json:"p,omitempty"`
	UserID    string         `json:"u,omitempty"`
	Type      string         `json:"t"`
	Data      map[string]any `json:"d"`
}

type message struct {
	Type string         `json:"type"`
	Data map[string]any `json:"data"`
}

// Notify implements Notifier: the frame goes to this host's subscribers at once, and through the
// bus (when there is one) to the other hosts', queued for the publisher Start runs.
func (h *Hub) Notify(ctx context.Context, f Frame) {
	if f.Data == nil {
		f.Data = map[string]any{}
	}
	b, err := json.Marshal(message{Type: f.Type, Data: f.Data})
	if err != nil {
		h.log.Error("events: encode frame", "type", f.Type, "err", err.Error())
		return
	}
	h.deliver(f.ProjectID, f.UserID, b)
	if h.bus == nil {
		return
	}
	w, err := json.Marshal(wire{Host: h.host, ProjectID: f.ProjectID, UserID: f.UserID, Type: f.Type, Data: f.Data})
	if err != nil {
		return
	}
	if len(w) > 7900 { // pg_notify's payload limit is 8000 bytes
		h.log.Warn("events: frame too large for other hosts, delivered locally only", "type", f.Type, "bytes", len(w))
		return
	}
	select {
	case h.toBus <- string(w):
	default:
		h.failed(errors.New("too many frames waiting for the database"), f.Type)
	}
}

// failed logs, rationed, a frame that did not reach the other hosts.
func (h *Hub) failed(err error, frameType string) {
	h.dropMu.Lock()
	defer h.dropMu.Unlock()
	h.dropped.Failed(err, "type", frameType)
}

// publish sends the queued frames to the bus until ctx ends, each under publishTimeout.
func (h *Hub) publish(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case payload := <-h.toBus:
			pctx, cancel := context.WithTimeout(ctx, publishTimeout)
			err := h.bus.Publish(pctx, payload)
			cancel()
			if err != nil {
				h.failed(err, "")
				continue
			}
			h.dropMu.Lock()
			h.dropped.Succeeded()
			h.dropMu.Unlock()
		}
	}
}

// deliver queues b for the subscribers of projectID, or for userID's connections when there is
// no project.
func (h *Hub) deliver(projectID, userID string, b []byte) int {
	h.mu.RLock()
	var targets []*Client
	set := h.byProject[projectID]
	if projectID == "" {
		set = h.byUser[userID]
	}
	targets = make([]*Client, 0, len(set))
	for c := range set {
		targets = append(targets, c)
	}
	h.mu.RUnlock()
	if len(targets) > 0 {
		b = h.sign(b)
	}
	n := 0
	for _, c := range targets {
		if h.offer(c, b) {
			n++
		}
	}
	return n
}

// Start runs the bus publisher and listener (when the hub has a bus) until ctx ends or Stop. The
// listener reconnects after errors with the loops' back-off (internal/backoff), logging a failure
// that repeats (the database down) once per doubling of its count, not once per attempt.
func (h *Hub) Start(ctx context.Context) error {
	if h.bus == nil {
		return nil
	}
	h.runMu.Lock()
	defer h.runMu.Unlock()
	if h.done != nil {
		return errors.New("events: hub already started")
	}
	ctx, h.cancel = context.WithCancel(ctx)
	h.done = make(chan struct{})
	published := make(chan struct{})
	go func() {
		defer close(published)
		h.publish(ctx)
	}()
	go func(done chan struct{}) {
		defer close(done)
		defer func() { <-published }()
		retry := backoff.Retry{Log: h.log, What: "events: frame listener stopped, reconnecting"}
		for ctx.Err() == nil {
			began := time.Now()
			err := h.bus.Listen(ctx, h.fromBus)
			if ctx.Err() != nil {
				return
			}
			// Listen says nothing when it has connected; one that lasted longer than the longest
			// back-off had: this failure starts a new run of them.
			if time.Since(began) > backoff.Loops.Max {
				retry.Succeeded()
			}
			if err == nil {
				err = errors.New("closed")
			}
			if !backoff.Sleep(ctx, retry.Failed(err)) {
				return
			}
		}
	}(h.done)
	return nil
}

// Stop ends the bus listener and waits for it.
func (h *Hub) Stop() {
	h.runMu.Lock()
	cancel, done := h.cancel, h.done
	h.runMu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

func (h *Hub) fromBus(payload string) {
	var w wire
	if err := json.Unmarshal([]byte(payload), &w); err != nil {
		h.log.Warn("events: bad frame on the bus", "err", err.Error())
		return
	}
	if w.Host == h.host {
		return // delivered locally already
	}
	b, err := json.Marshal(message{Type: w.Type, Data: w.Data})
	if err != nil {
		return
	}
	h.deliver(w.ProjectID, w.UserID, b)
}

func add(m map[string]map[*Client]struct{}, key string, c *Client) {
	s := m[key]
	if s == nil {
		s = map[*Client]struct{}{}
		m[key] = s
	}
	s[c] = struct{}{}
}

func remove(m map[string]map[*Client]struct{}, key string, c *Client) {
	if s := m[key]; s != nil {
		delete(s, c)
		if len(s) == 0 {
			delete(m, key)
		}
	}
}

// StoreBus is a Bus over the store's PubSub (PostgreSQL LISTEN/NOTIFY) on one channel.
type StoreBus struct {
	PubSub  store.PubSub
	Channel string
}

// Publish implements Bus.
func (b StoreBus) Publish(ctx context.Context, payload string) error {
	return b.PubSub.Publish(ctx, b.Channel, payload)
}

// Listen implements Bus.
func (b StoreBus) Listen(ctx context.Context, fn func(payload string)) error {
	return b.PubSub.Listen(ctx, b.Channel, fn)
}
