// Command chatflow-plugin serves the chatflow engine as a Reelforge plugin. Its settings (url,
// kb_chatflow_id) come from its engine entry, manifests/engines/chatflow.yaml, through the host.
package main

import (
	"log/slog"
	"os"

	"github.com/reelforge/reelforge/plugins/chatflow"
	"github.com/reelforge/reelforge/sdk/engine"
)

func main() {
	// go-plugin forwards the plugin's stderr into the host's log; stdout belongs to the handshake.
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	opts := chatflow.OptionsFrom(engine.Settings(), logger)
	engine.Serve(func() engine.Engine { return chatflow.New(opts) })
}
