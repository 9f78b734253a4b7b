package api

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/reelforge/reelforge/host/capability"
	"github.com/reelforge/reelforge/host/plugins"
	"github.com/reelforge/reelforge/host/store"
)

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
	db := fiber.Map{"driver": s.Store.Name(), "ok": dbOK, "search_path": searchPath}
	if !dbOK {
		status, code = "degraded", fiber.StatusServiceUnavailable
		db["cause"] = cause
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(dbRetryAfter))
	}
	body := fiber.Map{
		"status":   status,
		"version":  s.Config.Version,
		"uptime_s": math.Round(time.Since(s.started).Seconds()*10) / 10,
		"database": db,
		"engines":  engines,
	}
	if r, ok := s.Store.(store.VectorIndexReporter); ok && dbOK && s.Store.SupportsVectorSearch() {
		if vi, err := r.VectorIndexStatus(ctx); err == nil {
			fits := vi.IndexBytes <= vi.SharedBufferBytes
			db["vector_index"] = fiber.Map{"index_bytes": vi.IndexBytes, "shared_buffers_bytes": vi.SharedBufferBytes,
				"fits_buffer_cache": fits, "pending": vi.Pending}
			if !fits {
				// Not degraded (searches work), but each one then reads index pages from outside
				// PostgreSQL's cache: slower, and much slower on the first pass after a restart.
				body["warnings"] = []string{fmt.Sprintf("the knowledge base's HNSW index (%d MB) is larger than PostgreSQL's shared_buffers (%d MB): "+
					"vector searches read index pages from outside the buffer cache; set shared_buffers to at least %d MB (README, PostgreSQL)",
					vi.IndexBytes>>20, vi.SharedBufferBytes>>20, (vi.IndexBytes>>20)+(vi.IndexBytes>>22)+1)}
			}
			if vi.PendingLimit > 0 && vi.Pending >= vi.PendingLimit {
				// Counted up to the limit: at it, there are that many or more. Not degraded either:
				// the chunks are found, but each search scans every one of them exactly.
				warnings, _ := body["warnings"].([]string)
				body["warnings"] = append(warnings, fmt.Sprintf("%d or more knowledge chunks are waiting for the HNSW index: "+
					"every vector search scans them exactly (about 2.5 µs of PostgreSQL's CPU each); the indexer works on them "+
					"without rest, and indexes them all once ingests pause (README, PostgreSQL)", vi.PendingLimit))
			}
		}
	}
	if r, ok := s.Store.(store.PrewarmReporter); ok && dbOK {
		p := r.PrewarmStatus()
		pw := fiber.Map{"state": p.State, "buffer_bytes": p.BufferBytes, "cache_bytes": p.CacheBytes, "left_bytes": p.LeftBytes}
		if p.Reason != "" {
			pw["reason"] = p.Reason
		}
		if !p.Finished.IsZero() {
			pw["seconds"] = math.Round(p.Finished.Sub(p.Started).Seconds()*10) / 10
		}
		db["prewarm"] = pw
		if (p.State == "unavailable" && !p.Autoprewarm) || p.State == "failed" {
			// Not degraded either: the first searches after a restart of PostgreSQL read from disk.
			warnings, _ := body["warnings"].([]string)
			body["warnings"] = append(warnings, "the knowledge tables are not prewarmed after a restart of PostgreSQL ("+p.Reason+
				"): the first searches then read from disk; CREATE EXTENSION pg_prewarm as a superuser, or set the server's autoprewarm (README, PostgreSQL)")
		}
	}
	// Each engine's detailed state (ready, unconfigured, degraded, restarting, disabled) and why
	// it is not ready: its tool's check, a crash, the handshake's refusal, its entry.
	if d, ok := s.Engines.(interface {
		EngineDetails() map[string]plugins.Detail
	}); ok {
		body["engine_details"] = d.EngineDetails()
	}
	// What the host can do of each capability a workflow relies on, and what is missing
	// (host/capability), so a front end can warn before a run that cannot end with its product.
	if c, ok := s.Engines.(interface {
		Capabilities() map[string]capability.Capability
	}); ok {
		body["capabilities"] = c.Capabilities()
	}
	if s.Scheduler != nil {
		body["scheduler"] = fiber.Map{"mode": s.Scheduler.Mode(), "fallback_active": s.Scheduler.FallbackActive()}
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
