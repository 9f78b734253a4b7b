// Command chatflow-plugin serves the chatflow engine as a Reelforge plugin. It reads CHATFLOW_URL
// and CHATFLOW_KB_ID from its environment.
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
	opts := chatflow.Options{URL: os.Getenv("CHATFLOW_URL"), DefaultChatflowID: os.Getenv("CHATFLOW_KB_ID"), Logger: logger}
	engine.Serve(func() engine.Engine { return chatflow.New(opts) })
}
