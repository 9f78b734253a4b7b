// Command generators-plugin serves the generators engine as a Reelforge plugin: it does the
// speech, video, music and link jobs the host hands it (espeak-ng and ffmpeg run as its children,
// and die with it). Its settings (data_dir, the external generators' URLs, fetch_allow) come from
// its engine entry, manifests/engines/generators.yaml, through the host.
package main

import (
	"log/slog"
	"os"

	"github.com/reelforge/reelforge/plugins/generators"
	"github.com/reelforge/reelforge/sdk/engine"
)

func main() {
	// go-plugin forwards the plugin's stderr into the host's log; stdout belongs to the handshake.
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	opts := generators.OptionsFrom(engine.Settings(), logger)
	engine.Serve(func() engine.Engine { return generators.New(opts) })
}
