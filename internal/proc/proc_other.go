//go:build !linux

package proc

import (
	"os"
	"os/exec"
)

// DieWithParent does nothing where the platform has no parent-death signal: the Registry's
// start-up sweep is then what ends leftovers.
func DieWithParent(cmd *exec.Cmd) {}

func killGroup(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

func startTime(pid int) (string, bool) { return "", false }
