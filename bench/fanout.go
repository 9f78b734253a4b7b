package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/api"
	"github.com/reelforge/reelforge/host/auth"
	"github.com/reelforge/reelforge/host/config"
	"github.com/reelforge/reelforge/host/events"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/sqlitestore"
)

// fanOutResult is one WebSocket fan-out run.
type fanOutResult struct {
	Clients   int     `json:"clients"`
	Frames    int     `json:"frames"`
	Delivered int     `json:"delivered"`
	P50MS     float64 `json:"p50_ms"`
	P99MS     float64 `json:"p99_ms"`
	MaxMS     float64 `json:"max_ms"`
}

// fanOut serves the API on a local port over a SQLite store in dir, connects clients WebSocket
// clients subscribed to one project, sends frames task:progress frames 20 ms apart through the hub
// and reports the latency from Notify to each client's read.
func fanOut(ctx context.Context, dir string, clients, frames int) (*fanOutResult, error) {
	st, err := sqlitestore.Open(ctx, filepath.Join(dir, "fanout.db"), sqlitestore.Options{})
	if err != nil {
		return nil, err
	}
	defer st.Close()
	cfg := config.Defaults()
	cfg.JWTSecret = uuid.NewString() + uuid.NewString()
	// Every bench client is the one bench user: lift the per-user WebSocket cap to the client count.
	cfg.WSConnectionsPerUser = max(cfg.WSConnectionsPerUser, clients)
	hub := events.NewHub(events.HubOptions{QueueSize: max(256, frames)})
	s := &api.Server{Config: &cfg, Store: st, Auth: auth.New(st, cfg.JWTSecret, 4), Log: slog.New(slog.DiscardHandler), Hub: hub, Notifier: hub}
	app := s.App()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go app.Listener(ln)                            // ends with the shutdown below
	defer app.ShutdownWithTimeout(2 * time.Second) // best effort

	u := &store.User{ID: uuid.NewString(), Email: uuid.NewString() + "@bench.local", Username: "bench", PasswordHash: "x", Role: store.RoleUser}
	if err := st.CreateUser(ctx, u); err != nil {
		return nil, err
	}
	p := &store.Project{ID: uuid.NewString(), UserID: u.ID, Name: "bench"}
	if err := st.CreateProject(ctx, p); err != nil {
		return nil, err
	}
	tok, err := s.Auth.IssueAccess(u)
	if err != nil {
		return nil, err
	}
	wsURL := "ws://" + ln.Addr().String() + "/ws?token=" + url.QueryEscape(tok)

	conns := make([]*websocket.Conn, clients)
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := range clients {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c, _, err := websocket.DefaultDialer.DialContext(ctx, wsURL, nil)
			if err != nil {
				errs <- err
				return
			}
			if err := c.WriteJSON(map[string]any{"type": "subscribe:project", "data": map[string]any{"projectId": p.ID}}); err != nil {
				errs <- err
				return
			}
			var ack struct{ Type string }
			_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
			if err := c.ReadJSON(&ack); err != nil || ack.Type != "subscribed" {
				errs <- fmt.Errorf("subscribe answer %q: %v", ack.Type, err)
				return
			}
			conns[i] = c
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return nil, fmt.Errorf("fan-out: connect: %w", err)
	}

	lat := make([][]time.Duration, clients)
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			_ = c.SetReadDeadline(time.Now().Add(time.Duration(frames)*20*time.Millisecond + 30*time.Second))
			for range frames {
				var f struct {
					Data struct {
						Sent int64 `json:"sent"`
					} `json:"data"`
				}
				_, b, err := c.ReadMessage()
				if err != nil {
					return
				}
				now := time.Now()
				if json.Unmarshal(b, &f) == nil {
					lat[i] = append(lat[i], now.Sub(time.Unix(0, f.Data.Sent)))
				}
			}
		}()
	}
	for k := range frames {
		hub.Notify(ctx, events.Frame{ProjectID: p.ID, UserID: u.ID, Type: events.FrameTaskProgress,
			Data: map[string]any{"taskId": "bench", "progress": k, "sent": time.Now().UnixNano()}})
		time.Sleep(20 * time.Millisecond)
	}
	wg.Wait()
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	res := &fanOutResult{Clients: clients, Frames: frames, Delivered: len(all)}
	if len(all) > 0 {
		q := func(p float64) float64 {
			return float64(all[min(len(all)-1, int(p*float64(len(all))))].Microseconds()) / 1000
		}
		res.P50MS, res.P99MS, res.MaxMS = q(0.50), q(0.99), float64(all[len(all)-1].Microseconds())/1000
	}
	return res, nil
}
