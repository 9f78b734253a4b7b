// Package proc starts the child processes of the host and its plugins (ffmpeg, espeak-ng, ffprobe,
// pdftotext) so that none outlives its starter: each runs in a process group of its own, is
// killed with the whole group when its context ends, and on Linux gets SIGKILL from the kernel
// when its parent dies, however it dies. A Registry also records each child in a folder (of
// DATA_DIR), so that the next start of the host kills whatever a previous life left, should the
// kernel's parent-death signal not have reached it.
//
// Start at Command; the host calls Registry.Sweep once at start.
package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Command is exec.CommandContext for a child that dies with its starter: its own process group
// (so that the tools it starts in turn go with it), SIGKILL to that group when ctx ends, and the
// parent-death signal where the platform has one.
func Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	DieWithParent(cmd)
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
	// A grandchild holding stdout or stderr open must not keep Wait waiting for ever.
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// Registry records the children started through it in Dir, one file per child, removed when
// the child is waited for. The zero Registry (Dir "") records nothing. It is safe for concurrent
// use.
type Registry struct {
	Dir string
}

// Run starts cmd (made by Command), records it while it runs, and waits for it.
func (r Registry) Run(cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	done := r.record(cmd.Process.Pid)
	err := cmd.Wait()
	done()
	return err
}

// Output is Run that returns the child's standard output.
func (r Registry) Output(cmd *exec.Cmd) ([]byte, error) {
	var out strings.Builder
	if cmd.Stdout != nil {
		return nil, errors.New("proc: Stdout already set")
	}
	cmd.Stdout = &out
	err := r.Run(cmd)
	return []byte(out.String()), err
}

func (r Registry) record(pid int) (done func()) {
	if r.Dir == "" {
		return func() {}
	}
	start, ok := startTime(pid)
	if !ok {
		return func() {}
	}
	if err := os.MkdirAll(r.Dir, 0o700); err != nil {
		return func() {}
	}
	path := filepath.Join(r.Dir, strconv.Itoa(pid))
	if err := os.WriteFile(path, []byte(start+"\n"), 0o600); err != nil {
		return func() {}
	}
	return func() { _ = os.Remove(path) }
}

// Sweep kills the process groups of the children a previous life recorded in Dir that are still
// alive (the same pid with the same start time: not a process that reused the pid), and forgets
// every record. Call it at start, before starting children. It reports how many it killed.
func (r Registry) Sweep() (int, error) {
	if r.Dir == "" {
		return 0, nil
	}
	ents, err := os.ReadDir(r.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("proc: sweep %s: %w", r.Dir, err)
	}
	killed := 0
	for _, e := range ents {
		path := filepath.Join(r.Dir, e.Name())
		pid, err := strconv.Atoi(e.Name())
		b, rerr := os.ReadFile(path)
		_ = os.Remove(path) // a record that stays is read by the next sweep, which kills only a process whose start time still matches
		if err != nil || rerr != nil || pid <= 1 {
			continue
		}
		if now, ok := startTime(pid); ok && now == strings.TrimSpace(string(b)) {
			if killGroup(pid) == nil {
				killed++
			}
		}
	}
	return killed, nil
}
