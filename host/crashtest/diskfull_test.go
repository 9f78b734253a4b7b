package crashtest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reelforge/reelforge/internal/eventsink"
	"github.com/reelforge/reelforge/internal/testtool"
	"github.com/reelforge/reelforge/internal/tmpfs"
)

// TestDiskFullSQLite: a host on SQLite whose disk fills up while runs and ingests are under way
// (issue 38: the executor took the same run over 10,000 times a second, 93-96% of a core and
// 52,858 log lines in 10 s, and runs stayed stuck after space was freed). While the disk is full
// the host uses under 5% of a core and writes few log lines; once space is freed, without a
// restart, every acknowledged run and document ends (none lost, duplicated or stuck).
func TestDiskFullSQLite(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a real host and fills a tmpfs")
	}
	bin := build(t)
	disk := tmpfs.Mount(t, 128<<20)
	h := newHostIn(t, hostParams{bin: bin, dataDir: filepath.Join(disk, "data"), recv: eventsink.New(t), email: newEmail(), create: true})
	w := h.load(t, 0)
	testtool.Eventually(t, time.Minute, "acknowledged runs and documents", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.runIDs) >= 6 && len(w.docs) >= 2
	})
	fill := filepath.Join(disk, "fill")
	tmpfs.Fill(t, fill)
	w.stop() // the requests in flight met the full disk; the runs under way go on meeting it

	// Let the loops reach their back-off, then measure a window of the full disk. Both are
	// stretches of the clock the test measures over, not waits for a state: they stay sleeps.
	const settleIn, window = 5 * time.Second, 30 * time.Second
	time.Sleep(settleIn)
	cpu0, lines0, at0 := h.CPU(), logLines(t, h.Log), time.Now()
	time.Sleep(window)
	cpu1, lines1, at1 := h.CPU(), logLines(t, h.Log), time.Now()
	share := (cpu1 - cpu0).Seconds() / at1.Sub(at0).Seconds()
	perMinute := float64(lines1-lines0) * 60 / at1.Sub(at0).Seconds()
	t.Logf("disk full: host CPU %.1f%% of a core, %.0f log lines a minute", share*100, perMinute)
	if share > 0.05 {
		t.Errorf("the host used %.1f%% of a core while the disk was full, want under 5%%", share*100)
	}
	if perMinute > 30 {
		t.Errorf("the host wrote %.0f log lines a minute while the disk was full, want a few; by message:\n%s",
			perMinute, byMessage(t, h.Log, lines0, lines1))
	}

	if err := os.Remove(fill); err != nil {
		t.Fatal(err)
	}
	c := h.settle(t, w)
	t.Logf("after space was freed: %s", c)
	if c.lost+c.duplicated+c.stuck > 0 {
		b, _ := os.ReadFile(h.Log)
		var warn []string
		for _, l := range strings.Split(string(b), "\n") {
			if !strings.Contains(l, "level=INFO") {
				warn = append(warn, l)
			}
		}
		t.Errorf("after space was freed: %s; want none lost, duplicated or stuck; the host's warnings (last 150):\n%s",
			c, strings.Join(warn[max(0, len(warn)-150):], "\n"))
	}
}

// byMessage counts the log lines from..to (0-based, to excluded) of the log at path by message.
func byMessage(t *testing.T, path string, from, to int) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	counts := map[string]int{}
	for _, l := range lines[from:min(to, len(lines))] {
		msg := l
		if i := strings.Index(l, "msg="); i >= 0 {
			msg = l[i:]
			if j := strings.Index(msg, " "); j > 0 && !strings.HasPrefix(msg, `msg="`) {
				msg = msg[:j]
			} else if j := strings.Index(msg[5:], `"`); j > 0 {
				msg = msg[:j+6]
			}
		}
		counts[msg]++
	}
	var out strings.Builder
	for m, n := range counts {
		fmt.Fprintf(&out, "%5d %s\n", n, m)
	}
	return out.String()
}

// logLines counts the lines of the log file at path.
func logLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}
