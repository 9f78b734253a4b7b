// Package testhost runs the real host as a process, for the tests that need one whole: the crash
// test kills it (host/crashtest), the fault test breaks its database under it (host/faulttest).
// Start here: Build the binary once (Main, from the package's TestMain, removes it), New a Host
// with its own port, DATA_DIR and log, Start it, WaitHealth, then Call its API. Its log's tail is
// printed when the test fails.
package testhost

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reelforge/reelforge/internal/testtool"
)

// Binaries are what Build made: the host and the PLUGIN_DIR of the plugins asked for.
type Binaries struct {
	Host      string
	PluginDir string
	Manifests string // the module's manifests folder (MANIFEST_DIR)
}

var (
	buildMu sync.Mutex
	built   = map[string]error{} // output path -> the build's error
	binDir  string
	modRoot string
)

// Build builds the host, and the plugin of each engine named (plugins/<name>/cmd/<name>-plugin,
// into PluginDir), once per test binary: every test of a package shares them.
func Build(t testing.TB, plugins ...string) Binaries {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if binDir == "" {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			t.Fatalf("go env GOMOD: %v", err)
		}
		modRoot = filepath.Dir(strings.TrimSpace(string(out)))
		if binDir, err = os.MkdirTemp("", "testhost-*"); err != nil {
			t.Fatal(err)
		}
	}
	b := Binaries{Host: filepath.Join(binDir, "reelforge"), PluginDir: filepath.Join(binDir, "plugins"),
		Manifests: filepath.Join(modRoot, "manifests")}
	targets := map[string]string{b.Host: "./host"}
	for _, p := range plugins {
		targets[filepath.Join(b.PluginDir, p+"-plugin")] = "./plugins/" + p + "/cmd/" + p + "-plugin"
	}
	for out, pkg := range targets {
		err, done := built[out]
		if !done {
			cmd := exec.Command("go", "build", "-o", out, pkg)
			cmd.Dir = modRoot
			cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false -tags=sqlite_fts5")
			if b, berr := cmd.CombinedOutput(); berr != nil {
				err = fmt.Errorf("go build %s: %w\n%s", pkg, berr, b)
			}
			built[out] = err
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// Main runs the package's tests and removes what Build made; a TestMain calls it.
func Main(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// poll is how often the harness asks a host again: each look is a request to it (one a run, for
// SettleRuns), so not as often as testtool.Poll.
const poll = 200 * time.Millisecond

// Options describe a host process.
type Options struct {
	Name    string   // in failure messages and the log's name; "host" when empty
	Bin     Binaries // required: what Build made
	DataDir string   // its DATA_DIR; a t.TempDir() when empty
	// Env are more environment settings (DATABASE_URL, ...); they win over the defaults (a test
	// port and DATA_DIR, the built PLUGIN_DIR and manifests, text logs, LEASE_MS=3000, secrets of
	// the right length, no rate limit in practice).
	Env []string
}

// Host is one host process, started and stopped (or killed) as the test says. Not safe for
// concurrent Start/Stop/Kill; Call may be used from many goroutines.
type Host struct {
	Name    string
	DataDir string
	Port    int
	Env     []string // the process's whole environment
	Log     string   // the path of its log (stdout and stderr, across restarts)
	Token   string   // sent as a bearer token by Call when set
	bin     string
	log     *os.File
	cmd     *exec.Cmd // the last one started; nil before Start
}

// New makes a host process (not started: see Start) on a free port; its log is kept in a
// folder of the test's, apart from DATA_DIR, and its last 4 KB printed if the test fails. The
// process is stopped when the test ends.
func New(t testing.TB, o Options) *Host {
	t.Helper()
	h := &Host{Name: o.Name, DataDir: o.DataDir, Port: testtool.FreePort(t), bin: o.Bin.Host}
	if h.Name == "" {
		h.Name = "host"
	}
	if h.DataDir == "" {
		h.DataDir = t.TempDir()
	}
	h.Env = append(os.Environ(), "PORT="+strconv.Itoa(h.Port), "DATA_DIR="+h.DataDir,
		"PLUGIN_DIR="+o.Bin.PluginDir, "MANIFEST_DIR="+o.Bin.Manifests, "LOG_FORMAT=text", "LEASE_MS=3000",
		"RATE_LIMIT_PER_MINUTE=1000000", "JWT_SECRET=test-host-jwt-secret-test-host-jwt-secret",
		"CALLBACK_SECRET=test-host-callback-secret-0123456789")
	h.Env = append(h.Env, o.Env...)
	// TESTHOST_LOG_DIR keeps the whole log past the test, to read what the last 4 KB leave out.
	logDir := os.Getenv("TESTHOST_LOG_DIR")
	if logDir == "" {
		logDir = t.TempDir()
	}
	log, err := os.CreateTemp(logDir, h.Name+"-*.log")
	if err != nil {
		t.Fatal(err)
	}
	h.log, h.Log = log, log.Name()
	t.Cleanup(func() {
		h.Stop()
		log.Close()
		if t.Failed() {
			b, _ := os.ReadFile(h.Log)
			t.Logf("%s log %s (last 4 KB):\n%s", h.Name, h.Log, b[max(0, len(b)-4096):])
		}
	})
	return h
}

// Command runs the host's binary with args (e.g. `user create ...`) in the host's environment,
// failing the test with its output if it fails.
func (h *Host) Command(t testing.TB, args ...string) {
	t.Helper()
	cmd := exec.Command(h.bin, args...)
	cmd.Env = h.Env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", h.Name, strings.Join(args, " "), err, out)
	}
}

// Start starts the process; it does not wait for it to answer (WaitHealth does).
func (h *Host) Start(t testing.TB) {
	t.Helper()
	cmd := exec.Command(h.bin)
	cmd.Env = h.Env
	cmd.Stdout, cmd.Stderr = h.log, h.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h.cmd = cmd
}

// PID is the running process's id, 0 when it is not running.
func (h *Host) PID() int {
	if !h.running() {
		return 0
	}
	return h.cmd.Process.Pid
}

// running reports whether the process was started and not yet waited for.
func (h *Host) running() bool { return h.cmd != nil && h.cmd.ProcessState == nil }

// Stop ends the process with SIGTERM (a graceful stop) and waits for it.
func (h *Host) Stop() { h.signal(syscall.SIGTERM) }

// Kill ends the process with SIGKILL (a crash) and waits for it.
func (h *Host) Kill() { h.signal(syscall.SIGKILL) }

func (h *Host) signal(sig syscall.Signal) {
	if h.running() {
		_ = h.cmd.Process.Signal(sig)
		_ = h.cmd.Wait()
	}
}

// WaitHealth waits until /health answers want, and returns its body; it fails the test when the
// process exits or within passes first.
func (h *Host) WaitHealth(t testing.TB, want int, within time.Duration) map[string]any {
	t.Helper()
	var body map[string]any
	var st int
	exited := false
	ok := testtool.WithinEvery(within, poll, func() bool {
		body = nil
		st = h.Call("GET", "/health", nil, &body)
		exited = h.cmd != nil && h.cmd.ProcessState != nil
		return st == want || exited
	})
	switch {
	case exited:
		t.Fatalf("%s exited", h.Name)
	case !ok:
		t.Fatalf("%s: /health did not answer %d within %s (last %d %v)", h.Name, want, within, st, body)
	}
	return body
}

// Call sends a JSON request (body nil: none) with the host's token and decodes the answer into
// out (nil: ignored); it answers the status, 0 when the host did not answer (killed meanwhile).
func (h *Host) Call(method, path string, body, out any) int {
	st, _ := h.TimedCall(method, path, body, out)
	return st
}

// TimedCall is Call that also answers how long the answer took.
func (h *Host) TimedCall(method, path string, body, out any) (int, time.Duration) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, fmt.Sprintf("http://127.0.0.1:%d%s", h.Port, path), rd)
	req.Header.Set("Content-Type", "application/json")
	if h.Token != "" {
		req.Header.Set("Authorization", "Bearer "+h.Token)
	}
	start := time.Now()
	res, err := (&http.Client{Timeout: time.Minute}).Do(req)
	took := time.Since(start)
	if err != nil {
		return 0, took
	}
	defer res.Body.Close()
	if out != nil {
		_ = json.NewDecoder(res.Body).Decode(out)
	}
	return res.StatusCode, took
}

// CPU is the CPU time (user and system) the running process has used so far; 0 when it is not
// running.
func (h *Host) CPU() time.Duration {
	pid := h.PID()
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]) // state ppid ... utime(11) stime(12)
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.Atoi(f[11])
	st, _ := strconv.Atoi(f[12])
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ is 100 on Linux
}

// RunsOutcome is how a set of runs ended (Settle).
type RunsOutcome struct {
	Completed, Failed int      // failed or cancelled
	Lost              []string // runs the host no longer knows (404)
	Stuck             []string // runs still under way when the bound passed
}

// SettleRuns waits, through h, until every run of ids has ended or within has passed, and
// answers how they ended.
func (h *Host) SettleRuns(ids []string, within time.Duration) RunsOutcome {
	var o RunsOutcome
	pending := map[string]bool{}
	for _, id := range ids {
		pending[id] = true
	}
	testtool.WithinEvery(within, poll, func() bool {
		for id := range pending {
			var out struct {
				Status string `json:"status"`
			}
			st := h.Call("GET", "/api/workflow/status/"+id, nil, &out)
			switch {
			case st == 404:
				o.Lost = append(o.Lost, id)
				delete(pending, id)
			case out.Status == "completed":
				o.Completed++
				delete(pending, id)
			case out.Status == "failed" || out.Status == "cancelled":
				o.Failed++
				delete(pending, id)
			}
		}
		return len(pending) == 0
	})
	for id := range pending {
		o.Stuck = append(o.Stuck, id)
	}
	return o
}

// SettleEvents waits, through h, until the outbox holds no event waiting for delivery or within
// has passed, and answers how many still wait. It asks an operator's route
// (/api/webhooks/notification-status): h's Token must be an admin's or an automation key.
func (h *Host) SettleEvents(t testing.TB, within time.Duration) int {
	t.Helper()
	pending := -1
	testtool.WithinEvery(within, poll, func() bool {
		var st struct {
			Data struct{ Pending int } `json:"data"`
		}
		if code := h.Call("GET", "/api/webhooks/notification-status", nil, &st); code != 200 {
			t.Fatalf("%s notification-status: %d", h.Name, code)
		}
		pending = st.Data.Pending
		return pending == 0
	})
	return pending
}

// Pace waits d between two requests of a load a test sends, or until the load stops: false when
// ctx ended first.
func Pace(ctx context.Context, d time.Duration) bool {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-tm.C:
		return true
	}
}
