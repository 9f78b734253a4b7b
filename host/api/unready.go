package api

import (
	"log/slog"
	"math"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/reelforge/reelforge/host/config"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// Unready is what the host serves while it waits for its database at start (app.New): /health
// answers 503 naming the cause (cause() gives it: unreachable, out of connections, full...), and
// every other route 503 RESOURCE_EXHAUSTED in the envelope with Retry-After, so clients and
// load balancers see a host that is coming up rather than a refused connection.
func Unready(cfg *config.Config, driver string, cause func() string) *fiber.App {
	// Its 503s are expected while it waits, and the waiting is logged by the caller: not each answer.
	s := &Server{Config: cfg, Log: slog.New(slog.DiscardHandler)}
	started := time.Now()
	app := fiber.New(fiber.Config{AppName: "reelforge", DisableStartupMessage: true, ErrorHandler: s.handleError})
	app.Use(s.requestHeaders)
	app.Get("/health", func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(dbRetryAfter))
		return c.Status(fiber.StatusServiceUnavailable).JSON(fiber.Map{
			"status":   "degraded",
			"version":  cfg.Version,
			"uptime_s": math.Round(time.Since(started).Seconds()*10) / 10,
			"database": fiber.Map{"driver": driver, "ok": false, "cause": cause()},
			"engines":  fiber.Map{},
			"starting": true,
		})
	})
	app.Use(func(c *fiber.Ctx) error {
		e := errcode.New(errcode.ResourceExhausted, "The host is starting: its database is not ready ("+cause()+"); try again shortly")
		e.RetryAfter = dbRetryAfter
		return e
	})
	return app
}
