package api

import (
	"context"
	"math"
	"time"

	"github.com/gofiber/fiber/v2"
)

// health answers DECISIONS.md's shape: 200 when the database answers, 503 when it does not.
func (s *Server) health(c *fiber.Ctx) error {
	ctx, cancel := context.WithTimeout(c.UserContext(), 2*time.Second)
	defer cancel()
	dbOK := s.Store.Ping(ctx) == nil
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
	if !dbOK {
		status, code = "degraded", fiber.StatusServiceUnavailable
	}
	body := fiber.Map{
		"status":   status,
		"version":  s.Config.Version,
		"uptime_s": math.Round(time.Since(s.started).Seconds()*10) / 10,
		"database": fiber.Map{"driver": s.Store.Name(), "ok": dbOK, "search_path": searchPath},
		"engines":  engines,
	}
	// Why each engine that is not ready is not (the handshake's refusal, a crash, its entry).
	if r, ok := s.Engines.(interface{ EngineReasons() map[string]string }); ok {
		if reasons := r.EngineReasons(); len(reasons) > 0 {
			body["engine_reasons"] = reasons
		}
	}
	if s.Scheduler != nil {
		body["scheduler"] = fiber.Map{"mode": s.Scheduler.Mode(), "fallback_active": s.Scheduler.FallbackActive()}
	}
	return c.Status(code).JSON(body)
}
