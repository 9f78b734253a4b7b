// Command graph-plugin serves the graph engine as a Reelforge plugin. Its settings (runner_url,
// callback_base_url) come from its engine entry, manifests/engines/graph.yaml, through the host.
package main

import (
	"github.com/reelforge/reelforge/plugins/graph"
	"github.com/reelforge/reelforge/sdk/engine"
)

func main() { engine.ServeConfigured(graph.Build) }
