package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"golang.org/x/crypto/bcrypt"

	"github.com/reelforge/reelforge/host/api"
	"github.com/reelforge/reelforge/host/auth"
	"github.com/reelforge/reelforge/host/config"
)

// benchAPI loads an authenticated GET /api/projects and POST /api/projects with many concurrent
// clients on loopback, per driver, next to a bare Fiber handler in the same run.
func benchAPI(ctx context.Context, o *options) error {
	fmt.Printf("## API: %d clients, %s per case, loopback HTTP/1.1 keep-alive\n\n", o.clients, o.duration)
	fmt.Println("| driver | case | requests/s | p50 ms | p99 ms | errors |")
	fmt.Println("|---|---|---:|---:|---:|---:|")
	bare := fiber.New(fiber.Config{DisableStartupMessage: true})
	bare.Get("/bare", func(c *fiber.Ctx) error {
		return c.JSON(fiber.Map{"success": true, "data": []any{}, "total": 0, "page": 1, "limit": 20})
	})
	url, stop, err := serve(bare)
	if err != nil {
		return err
	}
	r := load(o, func(c *http.Client) (int, error) { return get(c, url+"/bare", "") })
	stop()
	r.print("-", "bare Fiber GET")

	drivers := benchStores(ctx, o, "bench")
	for _, d := range drivers {
		st, closeStore, err := d.open()
		if err != nil {
			return fmt.Errorf("%s: %w", d.name, err)
		}
		cfg := config.Defaults()
		cfg.JWTSecret = "bench-secret-bench-secret-bench-secret"
		cfg.RateLimitUser = 1 << 30 // measure the work, not the limiter's refusals
		s := &api.Server{Config: &cfg, Store: st, Auth: auth.New(st, cfg.JWTSecret, bcrypt.MinCost), Log: slog.New(slog.DiscardHandler)}
		url, stop, err := serve(s.App())
		if err != nil {
			return err
		}
		tok, err := register(url)
		if err != nil {
			return err
		}
		for i := range 20 {
			if _, err := post(http.DefaultClient, url+"/api/projects", tok, fmt.Sprintf(`{"name":"seed %d"}`, i)); err != nil {
				return err
			}
		}
		r := load(o, func(c *http.Client) (int, error) { return get(c, url+"/api/projects", tok) })
		r.print(d.name, "GET /api/projects (auth)")
		var n atomic.Int64
		r = load(o, func(c *http.Client) (int, error) {
			return post(c, url+"/api/projects", tok, fmt.Sprintf(`{"name":"p %d","description":"bench"}`, n.Add(1)))
		})
		r.print(d.name, "POST /api/projects (auth)")
		stop()
		closeStore()
	}
	fmt.Println()
	return nil
}

type result struct {
	n, errs   int
	elapsed   time.Duration
	latencies []time.Duration
}

func (r result) print(driver, name string) {
	sort.Slice(r.latencies, func(i, j int) bool { return r.latencies[i] < r.latencies[j] })
	q := func(p float64) float64 {
		if len(r.latencies) == 0 {
			return 0
		}
		return float64(r.latencies[int(p*float64(len(r.latencies)-1))].Microseconds()) / 1000
	}
	fmt.Printf("| %s | %s | %.0f | %.2f | %.2f | %d |\n", driver, name, float64(r.n)/r.elapsed.Seconds(), q(0.5), q(0.99), r.errs)
}

// load runs fn from o.clients goroutines for o.duration.
func load(o *options, fn func(*http.Client) (int, error)) result {
	tr := &http.Transport{MaxIdleConns: o.clients * 2, MaxIdleConnsPerHost: o.clients * 2, IdleConnTimeout: time.Minute}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	var mu sync.Mutex
	var all result
	deadline := time.Now().Add(o.duration)
	start := time.Now()
	var wg sync.WaitGroup
	for range o.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lat []time.Duration
			errs := 0
			for time.Now().Before(deadline) {
				t0 := time.Now()
				status, err := fn(client)
				lat = append(lat, time.Since(t0))
				if err != nil || status >= 400 {
					errs++
				}
			}
			mu.Lock()
			all.latencies = append(all.latencies, lat...)
			all.errs += errs
			mu.Unlock()
		}()
	}
	wg.Wait()
	all.elapsed = time.Since(start)
	all.n = len(all.latencies)
	return all
}

func serve(app *fiber.App) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	go app.Listener(ln) // ends with Shutdown below
	return "http://" + ln.Addr().String(), func() { _ = app.ShutdownWithTimeout(5 * time.Second) }, nil
}

func get(c *http.Client, url, tok string) (int, error) {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	return send(c, req)
}

func post(c *http.Client, url, tok, body string) (int, error) {
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewBufferString(body))
	req.Header.Set("Content-Type", "application/json")
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	return send(c, req)
}

func send(c *http.Client, req *http.Request) (int, error) {
	res, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	_, err = io.Copy(io.Discard, res.Body)
	return res.StatusCode, err
}

func register(url string) (string, error) {
	body := fmt.Sprintf(`{"email":"bench%d@example.com","password":"bench-password","username":"bench"}`, time.Now().UnixNano())
	res, err := http.Post(url+"/api/auth/register", "application/json", bytes.NewBufferString(body))
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	var out struct {
		Token string `json:"token"`
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || out.Token == "" {
		return "", fmt.Errorf("register: status %d: %v", res.StatusCode, err)
	}
	return out.Token, nil
}
