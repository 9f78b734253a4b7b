// Command chatflow-plugin serves the chatflow engine as a Reelforge plugin. Its settings (url,
// kb_chatflow_id) come from its engine entry, manifests/engines/chatflow.yaml, through the host.
package main

import (
	"github.com/reelforge/reelforge/plugins/chatflow"
	"github.com/reelforge/reelforge/sdk/engine"
)

func main() { engine.ServeConfigured(chatflow.Build) }
