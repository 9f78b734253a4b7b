// Command reelforge is the Reelforge host: `reelforge` (or `reelforge serve`) serves the API.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/reelforge/reelforge/host/app"
	"github.com/reelforge/reelforge/host/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "reelforge:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	log := app.NewLogger(cfg, os.Stderr)
	cmd := "serve"
	if len(args) > 0 {
		cmd = args[0]
	}
	switch cmd {
	case "serve":
		h, err := app.New(ctx, cfg, log)
		if err != nil {
			return err
		}
		return h.Run(ctx)
	case "migrate":
		st, err := app.OpenStore(ctx, cfg, log)
		if err != nil {
			return err
		}
		log.Info("migrations applied", "database", st.Name())
		return st.Close()
	default:
		return fmt.Errorf("unknown command %q (commands: serve, migrate)", cmd)
	}
}
