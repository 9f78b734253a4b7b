// Command greeter-plugin serves the greeter engine as a Reelforge plugin.
package main

import (
	"example.com/greeter"
	"github.com/reelforge/reelforge/sdk/engine"
)

func main() { engine.Serve(greeter.New) }
