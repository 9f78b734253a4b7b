// Command gen writes the OpenAPI document of host/api/apidoc to the file named by its argument.
package main

import (
	"fmt"
	"os"

	"github.com/reelforge/reelforge/host/api/apidoc"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gen OUTPUT.json")
		os.Exit(2)
	}
	b, err := apidoc.Build()
	if err == nil {
		err = os.WriteFile(os.Args[1], b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
