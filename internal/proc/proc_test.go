//go:build linux

package proc

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reelforge/reelforge/internal/testtool"
)

// alive reports whether pid is a live process (a zombie awaiting its parent's wait counts as dead).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z"
}

func waitDead(t *testing.T, pid int) {
	t.Helper()
	testtool.Eventually(t, 10*time.Second, fmt.Sprintf("process %d to end", pid), func() bool { return !alive(pid) })
}

// A child's own children go with it when its context ends: the whole group is killed.
func TestCancelKillsTheGroup(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := Command(ctx, "sh", "-c", "sleep 300 & echo $!; wait")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	grandchild, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("grandchild pid %q: %v", line, err)
	}
	cancel()
	_ = cmd.Wait()
	waitDead(t, grandchild)
}

// A child is killed by the kernel when its parent dies by SIGKILL: the parent here is this test
// binary run again as a helper that starts `sleep` through Command and prints its pid.
func TestChildDiesWithItsParent(t *testing.T) {
	if os.Getenv("PROC_TEST_PARENT") == "1" {
		cmd := Command(context.Background(), "sleep", "300")
		if err := cmd.Start(); err != nil {
			os.Exit(2)
		}
		os.Stdout.WriteString(strconv.Itoa(cmd.Process.Pid) + "\n")
		time.Sleep(5 * time.Minute) // the subject: a child that lives on until its group is killed
		return
	}
	t.Parallel()
	parent := exec.Command(os.Args[0], "-test.run=^TestChildDiesWithItsParent$")
	parent.Env = append(os.Environ(), "PROC_TEST_PARENT=1")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	child, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("child pid %q: %v", line, err)
	}
	if !alive(child) {
		t.Fatalf("child %d not running", child)
	}
	_ = parent.Process.Signal(syscall.SIGKILL)
	_ = parent.Wait()
	waitDead(t, child)
}

// Sweep kills a recorded child still alive, forgets records of processes gone, and leaves a
// process that reused a recorded pid alone (its start time differs).
func TestSweepKillsRecordedLeftovers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := Registry{Dir: dir}
	left := exec.Command("sleep", "300")
	left.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := left.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = left.Process.Kill(); _ = left.Wait() })
	r.record(left.Process.Pid) // as a previous life would have
	other := exec.Command("sleep", "300")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
	if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(other.Process.Pid)), []byte("1\n"), 0o600); err != nil {
		t.Fatal(err) // a record of an older process that had this pid
	}
	n, err := r.Sweep()
	if err != nil || n != 1 {
		t.Fatalf("Sweep = %d, %v; want 1 killed", n, err)
	}
	_ = left.Wait()
	if !alive(other.Process.Pid) {
		t.Errorf("Sweep killed a process that reused a recorded pid")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("records left after Sweep: %d", len(ents))
	}
}

// Run records a child while it runs and forgets it once waited for.
func TestRunRecords(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := Registry{Dir: dir}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The record is written just after the start: the child waits for it to appear.
	cmd := Command(ctx, "sh", "-c", `while [ -z "$(ls `+dir+`)" ]; do sleep 0.01; done; ls `+dir)
	b, err := r.Output(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(b)) == "" {
		t.Errorf("the child saw no record of itself in %s", dir)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("records left after Run: %d", len(ents))
	}
}
