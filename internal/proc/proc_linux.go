package proc

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// DieWithParent puts the child in a process group of its own (a signal sent to its parent's group,
// such as a terminal's Ctrl-C, reaches the parent alone) and asks the kernel to SIGKILL it when its
// parent dies, even by SIGKILL. Command and the host's plugin client (sdk/engine) use it. The
// signal is tied to the OS thread that forked the child; the Go runtime retires no thread except
// one left locked by LockOSThread, so no child may be started from such a goroutine.
func DieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}

// killGroup SIGKILLs the process group led by pid, and pid itself should it have left the group.
func killGroup(pid int) error {
	gerr := syscall.Kill(-pid, syscall.SIGKILL)
	perr := syscall.Kill(pid, syscall.SIGKILL)
	if gerr != nil && perr != nil {
		return perr
	}
	return nil
}

// startTime is the start time of process pid in clock ticks since boot (field 22 of
// /proc/<pid>/stat), which tells a process from a later one that reused its pid; false when there
// is no such process, or only its zombie (dead, awaiting its new parent's wait).
func startTime(pid int) (string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces and parentheses
	if i < 0 {
		return "", false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 || f[0] == "Z" {
		return "", false
	}
	return f[19], true // fields from 3 on; start time is field 22
}
