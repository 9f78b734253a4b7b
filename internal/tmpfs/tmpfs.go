// Package tmpfs gives a test a small disk of its own that fills up: a tmpfs mounted on a new
// folder and unmounted when the test ends, so a test of a full disk never fills the machine's. It
// is for tests only. Mounting needs root; under -short the test is skipped (and says so).
package tmpfs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Mount mounts a tmpfs of size bytes on a new folder and returns it.
func Mount(t testing.TB, size int64) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: skipping a disk-full test (it mounts a tmpfs, as root)")
	}
	dir := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount a tmpfs (the test needs root; -short skips it): %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// Fill writes the file path until the disk it is on is full.
func Fill(t testing.TB, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			return
		}
	}
}
