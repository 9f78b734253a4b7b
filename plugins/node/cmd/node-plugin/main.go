// Command node-plugin serves the node engine as a Reelforge plugin.
package main

import (
	"log/slog"
	"os"

	"github.com/reelforge/reelforge/plugins/node"
	"github.com/reelforge/reelforge/sdk/engine"
)

func main() {
	// go-plugin forwards the plugin's stderr into the host's log; stdout belongs to the handshake.
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	engine.Serve(func() engine.Engine { return node.New(node.Options{Logger: logger}) })
}
