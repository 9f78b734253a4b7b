package engine

import (
	"os/exec"
	"syscall"
)

// tieToHost puts the plugin in a process group of its own, so a signal sent to the host's group
// (a terminal's Ctrl-C, a supervisor stopping the host) reaches the host alone and the host stops
// its plugins in order; and it asks Linux to SIGKILL the plugin when the host dies, even by
// SIGKILL, so no plugin outlives its host. The death signal is tied to the OS thread that forked
// the child; the Go runtime does not retire threads except those left locked by LockOSThread, so
// callers must not start plugins from such a goroutine.
func tieToHost(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
