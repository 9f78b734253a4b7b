// Package eventsbench measures the events machinery: outbox delivery throughput (events per second
// posted, signed, to a local receiver that answers 200 at once) and WebSocket fan-out latency to
// many clients of one project (time from Notify to the frame read by each client). It is meant
// for host/cmd/bench (make bench) and runs entirely on this machine.
package eventsbench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
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

// OutboxResult is one outbox throughput run.
type OutboxResult struct {
	Driver       string  `json:"driver"`
	Events       int     `json:"events"`
	BatchSize    int     `json:"batch_size"`
	Seconds      float64 `json:"seconds"`
	EventsPerSec float64 `json:"events_per_s"`
	EmitPerSec   float64 `json:"emit_per_s"` // Emit in its own transaction, one at a time
}

// Outbox stores n events in d, then runs a worker (batch size batch, 5 ms interval) until a local
// receiver has accepted them all.
func Outbox(ctx context.Context, d store.Driver, n, batch int) (*OutboxResult, error) {
	var got atomic.Int64
	all := make(chan struct{})
	rec := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if got.Add(1) == int64(n) {
			close(all)
		}
	}))
	defer rec.Close()
	start := time.Now()
	for i := range n {
		err := d.InTx(ctx, func(tx store.Driver) error {
			return events.Emit(ctx, tx, events.Event{Name: events.JobStatusChanged, Data: map[string]any{"jobId": i, "status": "running"}})
		})
		if err != nil {
			return nil, err
		}
	}
	emitted := time.Since(start)
	w := events.NewWorker(d, events.WorkerConfig{URL: rec.URL, Secret: "bench", Enabled: true, BatchSize: batch,
		Interval: 5 * time.Millisecond, Timeout: 5 * time.Second})
	start = time.Now()
	if err := w.Start(ctx); err != nil {
		return nil, err
	}
	defer w.Stop()
	select {
	case <-all:
	case <-time.After(5 * time.Minute):
		return nil, fmt.Errorf("eventsbench: %d of %d events delivered in 5 min", got.Load(), n)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	took := time.Since(start)
	return &OutboxResult{Driver: d.Name(), Events: n, BatchSize: batch, Seconds: took.Seconds(),
		EventsPerSec: float64(n) / took.Seconds(), EmitPerSec: float64(n) / emitted.Seconds()}, nil
}

// FanOutResult is one WebSocket fan-out run.
type FanOutResult struct {
	Clients   int     `json:"clients"`
	Frames    int     `json:"frames"`
	Delivered int     `json:"delivered"`
	P50MS     float64 `json:"p50_ms"`
	P99MS     float64 `json:"p99_ms"`
	MaxMS     float64 `json:"max_ms"`
}

// FanOut serves the API on a local port over a SQLite store in dir, connects clients WebSocket
// clients subscribed to one project, sends frames task:progress frames 20 ms apart through the hub
// and reports the latency from Notify to each client's read.
func FanOut(ctx context.Context, dir string, clients, frames int) (*FanOutResult, error) {
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
	go app.Listener(ln)                            //nolint:errcheck // ends with the shutdown below
	defer app.ShutdownWithTimeout(2 * time.Second) //nolint:errcheck // best effort

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
		return nil, fmt.Errorf("eventsbench: connect: %w", err)
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
	res := &FanOutResult{Clients: clients, Frames: frames, Delivered: len(all)}
	if len(all) > 0 {
		q := func(p float64) float64 {
			return float64(all[min(len(all)-1, int(p*float64(len(all))))].Microseconds()) / 1000
		}
		res.P50MS, res.P99MS, res.MaxMS = q(0.50), q(0.99), float64(all[len(all)-1].Microseconds())/1000
	}
	return res, nil
}

// Run measures outbox throughput on SQLite (and on PostgreSQL through openPG when it is not nil)
// and the fan-out to 1,000 clients, printing one JSON line per result to out.
func Run(ctx context.Context, out io.Writer, openPG func(ctx context.Context) (store.Driver, error)) error {
	dir, err := os.MkdirTemp("", "eventsbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	enc := json.NewEncoder(out)
	st, err := sqlitestore.Open(ctx, filepath.Join(dir, "outbox.db"), sqlitestore.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	drivers := []store.Driver{st}
	if openPG != nil {
		pg, err := openPG(ctx)
		if err != nil {
			return err
		}
		defer pg.Close()
		drivers = append(drivers, pg)
	}
	for _, d := range drivers {
		for _, batch := range []int{1, 10, 50} {
			r, err := Outbox(ctx, d, 2000, batch)
			if err != nil {
				return err
			}
			if err := enc.Encode(map[string]any{"bench": "events_outbox_delivery", "result": r}); err != nil {
				return err
			}
		}
	}
	r, err := FanOut(ctx, dir, 1000, 50)
	if err != nil {
		return err
	}
	return enc.Encode(map[string]any{"bench": "events_websocket_fanout", "result": r})
}
