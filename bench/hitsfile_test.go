package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reelforge/reelforge/host/kb"
)

// TestHitsFileReportsWriteErrors: -kb-hits reports a write that failed (here to /dev/full: no
// space) at close, where a file missing lines would otherwise compare as a change of results;
// a file written whole closes without error.
func TestHitsFileReportsWriteErrors(t *testing.T) {
	hit := []kb.Hit{{ChunkID: "c1"}}
	ok := filepath.Join(t.TempDir(), "hits.txt")
	h, err := newHitsFile(ok, "sqlite", 10)
	if err != nil {
		t.Fatal(err)
	}
	h.add("night lighting", hit)
	if err := h.close(); err != nil {
		t.Errorf("close = %v", err)
	}
	if b, err := os.ReadFile(ok); err != nil || !strings.Contains(string(b), "night lighting\tc1 ") {
		t.Errorf("hits file = %q, %v", b, err)
	}
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	h, err = newHitsFile("/dev/full", "sqlite", 10)
	if err != nil {
		t.Fatal(err)
	}
	h.add("night lighting", hit)
	if err := h.close(); err == nil || !strings.Contains(err.Error(), "-kb-hits") {
		t.Errorf("close after a failed write = %v, want the write's error", err)
	}
}
