// Command node-plugin serves the node engine as a Reelforge plugin.
package main

import (
	"log/slog"

	"github.com/reelforge/reelforge/plugins/node"
	"github.com/reelforge/reelforge/sdk/engine"
)

func main() {
	engine.ServeConfigured(func(_ map[string]string, log *slog.Logger) engine.Engine {
		return node.New(node.Options{Logger: log})
	})
}
