// Command graph-plugin serves the graph engine as a Reelforge plugin. Its settings (runner_url,
// callback_base_url) come from its engine entry, manifests/engines/graph.yaml, through the host.
package main

import (
	"log/slog"
	"os"

	"github.com/reelforge/reelforge/plugins/graph"
	"github.com/reelforge/reelforge/sdk/engine"
)

func main() {
	// go-plugin forwards the plugin's stderr into the host's log; stdout belongs to the handshake.
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	opts := graph.OptionsFrom(engine.Settings(), logger)
	engine.Serve(func() engine.Engine { return graph.New(opts) })
}
