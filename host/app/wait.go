package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/reelforge/reelforge/host/api"
	"github.com/reelforge/reelforge/host/config"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/internal/backoff"
)

// startWait is the back-off of a host waiting for its database at start: a quarter second, doubling
// to five, so the host comes up within seconds of the database.
var startWait = backoff.Policy{Min: 250 * time.Millisecond, Max: 5 * time.Second}

// openStoreWaiting opens the store; while the database cannot serve (a store.Fault: down, out of
// connections, its disk full), it retries with back-off and answers on the port meanwhile (api.Unready: /health 503 naming the cause, every route 503 in the envelope).
// Any other error (a bad DATABASE_URL, a failed migration) ends the start at once: waiting would
// not mend it.
func openStoreWaiting(ctx context.Context, cfg *config.Config, log *slog.Logger) (store.Driver, error) {
	var cause atomic.Value
	var unready *fiber.App
	stop := func() {
		if unready != nil {
			_ = unready.ShutdownWithTimeout(time.Second)
		}
	}
	retry := backoff.Retry{Policy: startWait, Log: log, What: "database not ready at start: waiting for it"}
	for {
		st, err := OpenStore(ctx, cfg, log)
		f := store.FaultOf(err)
		if err == nil || f == nil {
			stop()
			if err == nil {
				retry.Succeeded()
			}
			return st, err
		}
		cause.Store(f.Cause)
		if unready == nil {
			driver := "sqlite"
			if cfg.DatabaseURL != "" {
				driver = "postgres"
			}
			ln, lerr := net.Listen("tcp", ":"+strconv.Itoa(cfg.Port))
			if lerr != nil {
				return nil, errors.Join(fmt.Errorf("app: listen: %w", lerr), err)
			}
			unready = api.Unready(cfg, driver, func() string { s, _ := cause.Load().(string); return s })
			go func() { _ = unready.Listener(ln) }()
		}
		if !backoff.Sleep(ctx, retry.Failed(err, "cause", f.Cause)) {
			stop()
			return nil, fmt.Errorf("app: stopped while waiting for the database: %w", err)
		}
	}
}
