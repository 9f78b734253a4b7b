package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"
	"golang.org/x/crypto/bcrypt"

	"github.com/reelforge/reelforge/host/api"
	"github.com/reelforge/reelforge/host/auth"
	"github.com/reelforge/reelforge/host/config"
	"github.com/reelforge/reelforge/host/kb"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/sqlitestore"
	"github.com/reelforge/reelforge/host/store/storetest"
	"github.com/reelforge/reelforge/internal/textgen"
)

// BenchmarkGetProjects serves GET /api/projects (20 projects, authenticated, SQLite) and a bare
// Fiber handler over an in-memory listener, so the two per-request costs can be compared
// without the noise of a shared machine: run it under valgrind --tool=callgrind and divide the
// instruction counts (see BENCHMARKS.md). make bench measures the same over real loopback.
func BenchmarkGetProjects(b *testing.B) {
	bare := fiber.New(fiber.Config{DisableStartupMessage: true})
	bare.Get("/api/projects", func(c *fiber.Ctx) error {
		return c.JSON(fiber.Map{"success": true, "data": []any{}, "total": 0, "page": 1, "limit": 20})
	})
	b.Run("bare", func(b *testing.B) { benchGet(b, bare, "") })

	ctx := context.Background()
	s, st, svc := benchServer(b)
	u := storetest.NewUser(b, st, "")
	tok, err := svc.IssueAccess(u)
	if err != nil {
		b.Fatal(err)
	}
	for i := range 20 {
		p := &store.Project{ID: uuid.NewString(), UserID: u.ID, Name: fmt.Sprintf("seed %d", i)}
		if err := st.CreateProject(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("sqlite", func(b *testing.B) { benchGet(b, s.App(), tok) })
}

// benchServer is an API server on a new SQLite store (closed when b ends) with no rate limit,
// and its store and auth service.
func benchServer(b *testing.B) (*api.Server, *sqlitestore.Driver, *auth.Service) {
	st, err := sqlitestore.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), sqlitestore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	cfg := config.Defaults()
	cfg.JWTSecret = "bench-secret-bench-secret-bench-secret"
	cfg.DataDir = b.TempDir()
	cfg.RateLimitUser = 1 << 30
	svc := auth.New(st, cfg.JWTSecret, bcrypt.MinCost)
	return &api.Server{Config: &cfg, Store: st, Auth: svc, Log: slog.New(slog.DiscardHandler)}, st, svc
}

func benchGet(b *testing.B, app *fiber.App, tok string) {
	ln := fasthttputil.NewInmemoryListener()
	go app.Listener(ln) // ends with Shutdown below
	defer app.Shutdown()
	client := &fasthttp.Client{Dial: func(string) (net.Conn, error) { return ln.Dial() }}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		req, res := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(res)
		req.SetRequestURI("http://bench/api/projects")
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		for pb.Next() {
			if err := client.Do(req, res); err != nil || res.StatusCode() != fiber.StatusOK {
				b.Errorf("GET = %d, %v", res.StatusCode(), err)
				return
			}
		}
	})
}

// BenchmarkBatchText serves POST /api/knowledge/batch/text as make bench's HTTP ingest sends it
// (50 documents of 300 to 3,000 characters a call, SQLite, the local embedder) over an in-memory
// listener, one call at a time: what the route costs besides the ingest is its decoding of the
// body (kbBatchText). Every call's texts are new, so none is a duplicate.
func BenchmarkBatchText(b *testing.B) {
	s, st, svc := benchServer(b)
	s.KB = kb.New(st, kb.Options{})
	tok, err := svc.IssueAccess(storetest.NewUser(b, st, ""))
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	vocab := textgen.NewVocab(r)
	docs := make([]string, 50)
	for i := range docs {
		var t strings.Builder
		for want := 300 + r.IntN(2701); t.Len() < want; {
			t.WriteString(vocab.Word() + " ")
		}
		docs[i] = t.String()
	}
	app := s.App()
	ln := fasthttputil.NewInmemoryListener()
	go app.Listener(ln) // ends with Shutdown below
	defer app.Shutdown()
	client := &fasthttp.Client{Dial: func(string) (net.Conn, error) { return ln.Dial() }}
	req, res := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(res)
	req.SetRequestURI("http://bench/api/knowledge/batch/text")
	req.Header.SetMethod("POST")
	req.Header.SetContentType("application/json")
	req.Header.Set("Authorization", "Bearer "+tok)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		items := make([]map[string]string, len(docs))
		for j, d := range docs {
			items[j] = map[string]string{"text": fmt.Sprintf("Call %d. %s", i, d), "source_name": "bench", "visibility": "private"}
		}
		body, err := json.Marshal(map[string]any{"items": items})
		if err != nil {
			b.Fatal(err)
		}
		req.SetBody(body)
		b.StartTimer()
		if err := client.Do(req, res); err != nil || res.StatusCode() != fiber.StatusOK {
			b.Fatalf("batch/text = %d, %v: %.300s", res.StatusCode(), err, res.Body())
		}
	}
}
