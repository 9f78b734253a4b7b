// Command automation-plugin serves the automation engine as a Reelforge plugin. Its settings
// (webhook_url, callback_base_url) come from its engine entry, manifests/engines/automation.yaml,
// through the host.
package main

import (
	"log/slog"
	"os"

	"github.com/reelforge/reelforge/plugins/automation"
	"github.com/reelforge/reelforge/sdk/engine"
)

func main() {
	// go-plugin forwards the plugin's stderr into the host's log; stdout belongs to the handshake.
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	opts := automation.OptionsFrom(engine.Settings(), logger)
	engine.Serve(func() engine.Engine { return automation.New(opts) })
}
