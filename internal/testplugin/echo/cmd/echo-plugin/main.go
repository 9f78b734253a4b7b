// Command echo-plugin serves the echo engine as a Reelforge plugin.
package main

import (
	"github.com/reelforge/reelforge/internal/testplugin/echo"
	"github.com/reelforge/reelforge/sdk/engine"
)

func main() { engine.Serve(echo.New) }
