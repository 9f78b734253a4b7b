//go:build !linux

package engine

import "os/exec"

// setParentDeathSignal does nothing outside Linux; go-plugin still kills plugins on a clean exit.
func setParentDeathSignal(*exec.Cmd) {}
