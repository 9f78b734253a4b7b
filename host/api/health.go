package api

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/gofiber/fiber/v2"

	"github.com/reelforge/reelforge/host/capability"
	"github.com/reelforge/reelforge/host/plugins"
	"github.com/reelforge/reelforge/host/store"
)

// healthOperation declares GET /health (raw: its handler answers 503 with the same body when the
// database does not answer).
func (s *Server) healthOperation(root huma.API) {
	body := func(r huma.Registry, desc string) *huma.Response {
		return &huma.Response{Description: desc, Content: map[string]*huma.MediaType{
			"application/json": {Schema: r.Schema(reflect.TypeFor[Health](), true, "")}}}
	}
	reg := root.OpenAPI().Components.Schemas
	registerRaw(root, op{Method: "GET", Path: "/health", Tag: "Operations", Summary: "Liveness and dependencies",
		Desc: "503 when the database is unreachable (same body shape, status degraded)."},
		map[string]*huma.Response{"200": body(reg, "OK"), "503": body(reg, "Service Unavailable: the database does not answer")},
		s.health)
}

// Health is /health's answer (DECISIONS.md's shape). Its fields, and its records', are in the
// order of their names: it writes the bytes the map it replaced wrote.
type Health struct {
	Capabilities  map[string]capability.Capability `json:"capabilities,omitempty" doc:"what the host can do of each kind of work a workflow relies on (host/capability): ready; degraded (a lesser form, or its engine failing for now); unconfigured (nothing does it until something is installed or set)"`
	Database      HealthDatabase                   `json:"database"`
	EngineDetails map[string]plugins.Detail        `json:"engine_details,omitempty" doc:"each engine's detailed state (ready, unconfigured, degraded, restarting, disabled) and why it is not ready"`
	Engines       map[string]string                `json:"engines" doc:"each engine: ready, degraded or disabled"`
	Scheduler     *HealthScheduler                 `json:"scheduler,omitempty"`
	Status        string                           `json:"status" enum:"ok,degraded"`
	UptimeS       float64                          `json:"uptime_s"`
	Version       string                           `json:"version"`
	Warnings      []string                         `json:"warnings,omitempty" doc:"what an operator should change, e.g. shared_buffers smaller than the HNSW index"`
}

// HealthDatabase is /health's database.
type HealthDatabase struct {
	Cause       string             `json:"cause,omitempty" doc:"why the database cannot serve"`
	Driver      string             `json:"driver" enum:"postgres,sqlite"`
	OK          bool               `json:"ok"`
	Prewarm     *HealthPrewarm     `json:"prewarm,omitempty"`
	SearchPath  string             `json:"search_path" enum:"pgvector,in-memory"`
	VectorIndex *HealthVectorIndex `json:"vector_index,omitempty"`
}

// HealthVectorIndex is the HNSW index of the knowledge base (PostgreSQL with pgvector).
type HealthVectorIndex struct {
	FitsBufferCache    bool  `json:"fits_buffer_cache" doc:"false: a warning says what to set"`
	IndexBytes         int64 `json:"index_bytes" doc:"the HNSW index on disk"`
	Pending            int64 `json:"pending" doc:"chunks the background indexer has not indexed yet (counted up to 10,000); searches scan them exactly"`
	SharedBuffersBytes int64 `json:"shared_buffers_bytes" doc:"PostgreSQL's buffer cache"`
}

// HealthPrewarm is the last prewarm of the knowledge tables.
type HealthPrewarm struct {
	BufferBytes int64    `json:"buffer_bytes" doc:"read into shared buffers by the last prewarm"`
	CacheBytes  int64    `json:"cache_bytes" doc:"read into the OS page cache"`
	LeftBytes   int64    `json:"left_bytes" doc:"past both caches' room: left to the searches"`
	Reason      string   `json:"reason,omitempty" doc:"why unavailable or failed"`
	Seconds     *float64 `json:"seconds,omitempty" doc:"how long the last prewarm took, once done"`
	State       string   `json:"state" enum:"off,unavailable,waiting,running,done,failed"`
}

// HealthScheduler is the scheduler's mode.
type HealthScheduler struct {
	FallbackActive bool   `json:"fallback_active" doc:"the built-in timer runs because the automation tool stopped calling"`
	Mode           string `json:"mode" enum:"automation_managed,cron"`
}

// health answers DECISIONS.md's shape: 200 when the database answers, 503 when it does not.
func (s *Server) health(c *fiber.Ctx) error {
	ctx, cancel := context.WithTimeout(c.UserContext(), 2*time.Second)
	defer cancel()
	cause := s.databaseFault(ctx)
	dbOK := cause == ""
	engines := map[string]string{"node": "ready"}
	if s.Engines != nil {
		engines = s.Engines.EngineStates()
	}
	status := "ok"
	for _, st := range engines {
		if st == "degraded" {
			status = "degraded"
		}
	}
	searchPath := "in-memory"
	if s.Store.SupportsVectorSearch() {
		searchPath = "pgvector"
	}
	code := fiber.StatusOK
	body := Health{Status: status, Version: s.Config.Version, UptimeS: math.Round(time.Since(s.started).Seconds()*10) / 10,
		Database: HealthDatabase{Driver: s.Store.Name(), OK: dbOK, SearchPath: searchPath}, Engines: engines}
	if !dbOK {
		body.Status, code = "degraded", fiber.StatusServiceUnavailable
		body.Database.Cause = cause
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(dbRetryAfter))
	}
	if r, ok := s.Store.(store.VectorIndexReporter); ok && dbOK && s.Store.SupportsVectorSearch() {
		if vi, err := r.VectorIndexStatus(ctx); err == nil {
			fits := vi.IndexBytes <= vi.SharedBufferBytes
			body.Database.VectorIndex = &HealthVectorIndex{IndexBytes: vi.IndexBytes, SharedBuffersBytes: vi.SharedBufferBytes,
				FitsBufferCache: fits, Pending: vi.Pending}
			if !fits {
				// Not degraded (searches work), but each one then reads index pages from outside
				// PostgreSQL's cache: slower, and much slower on the first pass after a restart.
				body.Warnings = append(body.Warnings, fmt.Sprintf("the knowledge base's HNSW index (%d MB) is larger than PostgreSQL's shared_buffers (%d MB): "+
					"vector searches read index pages from outside the buffer cache; set shared_buffers to at least %d MB (README, PostgreSQL)",
					vi.IndexBytes>>20, vi.SharedBufferBytes>>20, (vi.IndexBytes>>20)+(vi.IndexBytes>>22)+1))
			}
			if vi.PendingLimit > 0 && vi.Pending >= vi.PendingLimit {
				// Counted up to the limit: at it, there are that many or more. Not degraded either:
				// the chunks are found, but each search scans every one of them exactly.
				body.Warnings = append(body.Warnings, fmt.Sprintf("%d or more knowledge chunks are waiting for the HNSW index: "+
					"every vector search scans them exactly (about 2.5 µs of PostgreSQL's CPU each); the indexer works on them "+
					"without rest, and indexes them all once ingests pause (README, PostgreSQL)", vi.PendingLimit))
			}
		}
	}
	if r, ok := s.Store.(store.PrewarmReporter); ok && dbOK {
		p := r.PrewarmStatus()
		pw := &HealthPrewarm{State: p.State, Reason: p.Reason, BufferBytes: p.BufferBytes, CacheBytes: p.CacheBytes, LeftBytes: p.LeftBytes}
		if !p.Finished.IsZero() {
			secs := math.Round(p.Finished.Sub(p.Started).Seconds()*10) / 10
			pw.Seconds = &secs
		}
		body.Database.Prewarm = pw
		if (p.State == "unavailable" && !p.Autoprewarm) || p.State == "failed" {
			// Not degraded either: the first searches after a restart of PostgreSQL read from disk.
			body.Warnings = append(body.Warnings, "the knowledge tables are not prewarmed after a restart of PostgreSQL ("+p.Reason+
				"): the first searches then read from disk; CREATE EXTENSION pg_prewarm as a superuser, or set the server's autoprewarm (README, PostgreSQL)")
		}
	}
	// Each engine's detailed state (ready, unconfigured, degraded, restarting, disabled) and why
	// it is not ready: its tool's check, a crash, the handshake's refusal, its entry.
	if d, ok := s.Engines.(interface {
		EngineDetails() map[string]plugins.Detail
	}); ok {
		body.EngineDetails = d.EngineDetails()
	}
	// What the host can do of each capability a workflow relies on, and what is missing
	// (host/capability), so a front end can warn before a run that cannot end with its product.
	if c, ok := s.Engines.(interface {
		Capabilities() map[string]capability.Capability
	}); ok {
		body.Capabilities = c.Capabilities()
	}
	if s.Scheduler != nil {
		body.Scheduler = &HealthScheduler{Mode: s.Scheduler.Mode(), FallbackActive: s.Scheduler.FallbackActive()}
	}
	return c.Status(code).JSON(body)
}

// databaseFault is why the database cannot serve ("" when it can): the cause of the Fault its ping
// failed with (unreachable, out of connections, timeout...), else the full disk of the last
// failed write, which a ping (a read) does not see. The ping gets 1 s of the 2 /health has: the
// driver may take half a second more to give up on a server that does not answer.
func (s *Server) databaseFault(ctx context.Context) string {
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := s.Store.Ping(pctx); err != nil {
		if f := store.FaultOf(err); f != nil {
			return f.Cause
		}
		if pctx.Err() != nil && ctx.Err() == nil {
			return store.CauseTimeout // no answer within the second: a stalled server
		}
		return store.CauseUnreachable
	}
	if r, ok := s.Store.(store.FaultReporter); ok {
		if f := r.WriteFault(); f != nil {
			return f.Cause
		}
	}
	return ""
}
