// Command reelforge is the Reelforge host: `reelforge` (or `reelforge serve`) serves the API; the
// other commands (migrate, user create, token create/list/revoke, manifests check, plugins check,
// kb ingest) are in host/cli.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/reelforge/reelforge/host/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
