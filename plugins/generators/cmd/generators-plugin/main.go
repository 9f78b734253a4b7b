// Command generators-plugin serves the generators engine as a Reelforge plugin. The engine submits
// its jobs through the host (whose generators.Dispatcher does the work), so it needs no settings.
package main

import (
	"github.com/reelforge/reelforge/plugins/generators"
	"github.com/reelforge/reelforge/sdk/engine"
)

func main() {
	engine.Serve(func() engine.Engine { return generators.New(generators.Options{}) })
}
