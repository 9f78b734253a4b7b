// Command automation-plugin serves the automation engine as a Reelforge plugin. Its settings
// (webhook_url, callback_base_url) come from its engine entry, manifests/engines/automation.yaml,
// through the host.
package main

import (
	"github.com/reelforge/reelforge/plugins/automation"
	"github.com/reelforge/reelforge/sdk/engine"
)

func main() { engine.ServeConfigured(automation.Build) }
