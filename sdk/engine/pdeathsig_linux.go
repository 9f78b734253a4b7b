package engine

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal asks Linux to SIGKILL the plugin when the host dies, even by SIGKILL. The
// signal is tied to the OS thread that forked the child; the Go runtime does not retire threads
// except those left locked by LockOSThread, so callers must not start plugins from such a goroutine.
func setParentDeathSignal(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
