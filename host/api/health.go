package api

import (
	"context"
	"math"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/reelforge/reelforge/host/plugins"
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
	// Each engine's detailed state (ready, unconfigured, degraded, restarting, disabled) and why
	// it is not ready: its tool's check, a crash, the handshake's refusal, its entry.
	if d, ok := s.Engines.(interface {
		EngineDetails() map[string]plugins.Detail
	}); ok {
		body["engine_details"] = d.EngineDetails()
	}
	if s.Scheduler != nil {
		body["scheduler"] = fiber.Map{"mode": s.Scheduler.Mode(), "fallback_active": s.Scheduler.FallbackActive()}
	}
	return c.Status(code).JSON(body)
}
