package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/reelforge/reelforge/host/auth"
	"github.com/reelforge/reelforge/host/config"
	"github.com/reelforge/reelforge/host/events"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/sqlitestore"
	"github.com/reelforge/reelforge/host/store/storetest"
)

type wsBundle struct {
	st   store.Driver
	auth *auth.Service
	hub  *events.Hub
	base string // ws://127.0.0.1:port
	http string
}

// setupWS serves the API on a real port (WebSocket needs one) over SQLite; tweak adjusts the
// configuration.
func setupWS(t *testing.T, tweak ...func(*config.Config)) *wsBundle {
	t.Helper()
	st, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "t.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg := config.Defaults()
	cfg.JWTSecret = "test-secret-test-secret-test-secret"
	for _, f := range tweak {
		f(&cfg)
	}
	hub := events.NewHub(events.HubOptions{QueueSize: 64})
	s := &Server{Config: &cfg, Store: st, Auth: auth.New(st, cfg.JWTSecret, 4), Log: slog.New(slog.DiscardHandler),
		Hub: hub, Notifier: hub}
	app := s.App()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go app.Listener(ln) // ends with Shutdown
	t.Cleanup(func() { _ = app.ShutdownWithTimeout(2 * time.Second) })
	return &wsBundle{st: st, auth: s.Auth, hub: hub, base: "ws://" + ln.Addr().String(), http: "http://" + ln.Addr().String()}
}

func (b *wsBundle) user(t *testing.T) (*store.User, string) {
	t.Helper()
	u := storetest.NewUser(t, b.st, "")
	tok, err := b.auth.IssueAccess(u)
	if err != nil {
		t.Fatal(err)
	}
	return u, tok
}

func (b *wsBundle) dial(t *testing.T, tok string) *websocket.Conn {
	t.Helper()
	c, res, err := websocket.DefaultDialer.Dial(b.base+"/ws?token="+url.QueryEscape(tok), nil)
	if err != nil {
		status := 0
		if res != nil {
			status = res.StatusCode
		}
		t.Fatalf("dial /ws: %v (HTTP %d)", err, status)
	}
	return c
}

type frame struct {
	Type string         `json:"type"`
	Data map[string]any `json:"data"`
}

func readFrame(t *testing.T, c *websocket.Conn, wait time.Duration) (*frame, error) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(wait))
	var f frame
	err := c.ReadJSON(&f)
	return &f, err
}

func subscribe(t *testing.T, c *websocket.Conn, projectID string) *frame {
	t.Helper()
	if err := c.WriteJSON(map[string]any{"type": "subscribe:project", "data": map[string]any{"projectId": projectID}}); err != nil {
		t.Fatal(err)
	}
	f, err := readFrame(t, c, 10*time.Second)
	if err != nil {
		t.Fatalf("answer to subscribe: %v", err)
	}
	return f
}

func TestWebSocketRefusesWithoutToken(t *testing.T) {
	t.Parallel()
	b := setupWS(t)
	tests := map[string]struct {
		url    string
		header http.Header
	}{
		"no token":        {b.base + "/ws", nil},
		"garbage token":   {b.base + "/ws?token=garbage.abc", nil},
		"garbage header":  {b.base + "/ws", http.Header{"Authorization": {"Bearer nope"}}},
		"empty query arg": {b.base + "/ws?token=", nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, res, err := websocket.DefaultDialer.Dial(tc.url, tc.header)
			if err == nil {
				c.Close()
				t.Fatalf("Dial(%s) upgraded, want 401", tc.url)
			}
			if res == nil || res.StatusCode != http.StatusUnauthorized {
				t.Fatalf("Dial(%s) = %v, want HTTP 401", tc.url, err)
			}
			body, _ := io.ReadAll(res.Body)
			var env struct {
				Success bool
				Error   struct{ Code string }
			}
			if json.Unmarshal(body, &env) != nil || env.Success || env.Error.Code != "AUTHENTICATION_ERROR" {
				t.Errorf("401 body = %s, want the error envelope", body)
			}
		})
	}
}

func TestWebSocketHeaderTokenAndPingPong(t *testing.T) {
	t.Parallel()
	b := setupWS(t)
	_, tok := b.user(t)
	c, _, err := websocket.DefaultDialer.Dial(b.base+"/ws", http.Header{"Authorization": {"Bearer " + tok}})
	if err != nil {
		t.Fatalf("dial with a header token: %v", err)
	}
	defer c.Close()
	pong := make(chan string, 1)
	c.SetPongHandler(func(s string) error { pong <- s; return nil })
	if err := c.WriteControl(websocket.PingMessage, []byte("hello-123"), time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	go func() { _, _, _ = c.ReadMessage() }() // control frames are handled while reading
	select {
	case got := <-pong:
		if got != "hello-123" {
			t.Errorf("pong payload = %q, want the ping's", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no pong within 5 s")
	}
}

func TestWebSocketSubscribeOwnership(t *testing.T) {
	t.Parallel()
	b := setupWS(t)
	owner, ownerTok := b.user(t)
	_, otherTok := b.user(t)
	p := storetest.NewProject(t, b.st, owner.ID)
	tests := map[string]struct {
		tok, project string
		wantType     string
		wantCode     string
	}{
		"own project":     {ownerTok, p.ID, "subscribed", ""},
		"other's project": {otherTok, p.ID, "error", "AUTHORIZATION_ERROR"},
		"missing project": {ownerTok, "00000000-0000-0000-0000-000000000000", "error", "AUTHORIZATION_ERROR"},
		"no project id":   {ownerTok, "", "error", "VALIDATION_ERROR"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := b.dial(t, tc.tok)
			defer c.Close()
			f := subscribe(t, c, tc.project)
			if f.Type != tc.wantType || (tc.wantCode != "" && f.Data["code"] != tc.wantCode) {
				t.Errorf("subscribe answer = %+v, want %s %s", f, tc.wantType, tc.wantCode)
			}
			if tc.wantCode == "AUTHORIZATION_ERROR" && f.Data["message"] != "Forbidden: project not accessible" {
				t.Errorf("error message = %v, want the 403 message", f.Data["message"])
			}
		})
	}
	// A deleted project is refused too.
	gone := storetest.NewProject(t, b.st, owner.ID)
	if err := b.st.SoftDeleteProject(context.Background(), gone.ID); err != nil {
		t.Fatal(err)
	}
	c := b.dial(t, ownerTok)
	defer c.Close()
	if f := subscribe(t, c, gone.ID); f.Type != "error" {
		t.Errorf("subscribe to a deleted project = %+v, want an error", f)
	}
}

// TestWebSocketFanOut1000: 1,000 clients subscribed to one project all receive its frames; a
// client of another user, who tried to subscribe to it, receives none.
func TestWebSocketFanOut1000(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 connections: skipped under -short")
	}
	const n, frames = 1000, 3
	b := setupWS(t, func(c *config.Config) { c.WSConnectionsPerUser = n }) // one user's 1,000 clients
	owner, tok := b.user(t)
	_, otherTok := b.user(t)
	p := storetest.NewProject(t, b.st, owner.ID)
	conns := make([]*websocket.Conn, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c := b.dial(t, tok)
			if f := subscribe(t, c, p.ID); f.Type != "subscribed" {
				t.Errorf("client %d: subscribe answer %+v", i, f)
			}
			conns[i] = c
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	other := b.dial(t, otherTok)
	defer other.Close()
	if f := subscribe(t, other, p.ID); f.Type != "error" {
		t.Fatalf("other user's subscribe = %+v, want an error", f)
	}
	if clients, _ := b.hub.Counts(); clients != n+1 {
		t.Errorf("hub counts %d clients, want %d", clients, n+1)
	}

	var got atomic.Int64
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			for k := range frames {
				f, err := readFrame(t, c, 20*time.Second)
				if err != nil {
					t.Errorf("client %d frame %d: %v", i, k, err)
					return
				}
				if f.Type != events.FrameTaskStatus || f.Data["taskId"] != "t-1" {
					t.Errorf("client %d got %+v", i, f)
					return
				}
				got.Add(1)
			}
		}()
	}
	for _, status := range []string{"queued", "running", "success"} {
		b.hub.Notify(context.Background(), events.Frame{ProjectID: p.ID, UserID: owner.ID, Type: events.FrameTaskStatus,
			Data: map[string]any{"taskId": "t-1", "status": status}})
	}
	wg.Wait()
	if got.Load() != n*frames {
		t.Errorf("frames received = %d, want %d", got.Load(), n*frames)
	}
	if f, err := readFrame(t, other, 500*time.Millisecond); err == nil {
		t.Errorf("the other user's client received %+v, want nothing", f)
	}
}

// A user past WS_MAX_CONNECTIONS_PER_USER gets the next connection closed with 1008 and the
// reason; another user is not affected.
func TestWSConnectionsPerUserCapped(t *testing.T) {
	t.Parallel()
	b := setupWS(t)
	_, tok := b.user(t)
	limit := config.Defaults().WSConnectionsPerUser
	for range limit {
		c := b.dial(t, tok)
		t.Cleanup(func() { c.Close() })
		// An answer proves the connection was admitted before the next one is made.
		if err := c.WriteJSON(map[string]any{"type": "subscribe:project", "data": map[string]any{"projectId": "none"}}); err != nil {
			t.Fatal(err)
		}
		if f, err := readFrame(t, c, 10*time.Second); err != nil || f.Type != "error" {
			t.Fatalf("answer of an admitted connection = %+v, %v", f, err)
		}
	}
	over := b.dial(t, tok)
	defer over.Close()
	_, err := readFrame(t, over, 5*time.Second)
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.ClosePolicyViolation || !strings.Contains(ce.Text, "too many connections") {
		t.Fatalf("connection %d of one user: read = %v, want close 1008 saying too many connections", limit+1, err)
	}
	_, other := b.user(t)
	c := b.dial(t, other)
	defer c.Close()
	if err := c.WriteJSON(map[string]any{"type": "ping"}); err != nil {
		t.Errorf("another user's connection: %v", err)
	}
}
