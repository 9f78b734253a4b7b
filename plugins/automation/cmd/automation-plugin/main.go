// Command automation-plugin serves the automation engine as a Reelforge plugin. It reads
// AUTOMATION_WEBHOOK_URL and CALLBACK_BASE_URL from its environment.
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
	opts := automation.Options{WebhookURL: os.Getenv("AUTOMATION_WEBHOOK_URL"), CallbackBaseURL: os.Getenv("CALLBACK_BASE_URL"), Logger: logger}
	engine.Serve(func() engine.Engine { return automation.New(opts) })
}
