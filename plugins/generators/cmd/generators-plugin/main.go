// Command generators-plugin serves the generators engine as a Reelforge plugin: it does the
// speech, video, music and link jobs the host hands it (espeak-ng and ffmpeg run as its children,
// and die with it). Its settings (data_dir, the external generators' URLs, fetch_allow) come from
// its engine entry, manifests/engines/generators.yaml, through the host.
package main

import (
	"github.com/reelforge/reelforge/plugins/generators"
	"github.com/reelforge/reelforge/sdk/engine"
)

func main() { engine.ServeConfigured(generators.Build) }
