// Command graph-plugin serves the graph engine as a Reelforge plugin. It reads RUNNER_URL and
// CALLBACK_BASE_URL from its environment (the host passes its own environment to plugins).
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
	opts := graph.Options{RunnerURL: os.Getenv("RUNNER_URL"), CallbackBaseURL: os.Getenv("CALLBACK_BASE_URL"), Logger: logger}
	engine.Serve(func() engine.Engine { return graph.New(opts) })
}
