package plugins

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/reelforge/reelforge/internal/testtool"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/enginetest"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// buildEcho builds internal/testplugin/echo's binary as dir/echo-plugin and returns dir.
func buildEcho(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "echo-plugin"), "github.com/reelforge/reelforge/internal/testplugin/echo/cmd/echo-plugin")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go build echo-plugin: %v", err)
	}
	return dir
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func waitFor(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	testtool.Eventually(t, within, what, cond)
}

func TestSupervisorRestartsKilledPlugin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and launches the echo plugin")
	}
	t.Parallel()
	dir := buildEcho(t)
	sup := New(Config{Name: "echo", Dir: dir, Logger: testLogger(t), BackoffMin: 50 * time.Millisecond, HealthInterval: 500 * time.Millisecond})
	if err := sup.Start(t.Context()); err != nil {
		t.Fatalf("Start() error = %v", err)
	}
	t.Cleanup(sup.Stop)
	waitFor(t, "ready", 10*time.Second, func() bool { return sup.State() == StateReady })
	eng, err := sup.Engine()
	if err != nil {
		t.Fatalf("Engine() error = %v", err)
	}
	info, err := eng.Info(t.Context())
	if err != nil || info.Name != "echo" {
		t.Fatalf("Info() = %+v, %v, want echo", info, err)
	}

	// A run in flight when the plugin is SIGKILLed fails promptly with EXTERNAL_SERVICE_ERROR.
	host := enginetest.NewRecordingHost()
	done := make(chan error, 1)
	go func() {
		_, err := eng.Run(t.Context(), host, &engine.RunRequest{RunID: "r1", Inputs: map[string]any{"sleep_ms": 30000}})
		done <- err
	}()
	waitFor(t, "the run's first step", 5*time.Second, func() bool { return len(host.Steps()) > 0 })
	pid := sup.PID()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill %d: %v", pid, err)
	}
	killed := time.Now()
	select {
	case err := <-done:
		t.Logf("in-flight run failed after %v: %v", time.Since(killed), err)
		if got := errcode.Of(err); got != errcode.ExternalService {
			t.Errorf("in-flight Run() code = %q (%v), want %q", got, err, errcode.ExternalService)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("in-flight Run() still blocked 2s after the plugin was killed")
	}

	// The supervisor restarts it and a later run succeeds.
	waitFor(t, "restart", 10*time.Second, func() bool { return sup.State() == StateReady && sup.PID() != pid })
	if got := sup.Restarts(); got != 1 {
		t.Errorf("Restarts() = %d, want 1", got)
	}
	eng, err = sup.Engine()
	if err != nil {
		t.Fatalf("Engine() after restart error = %v", err)
	}
	res, err := eng.Run(t.Context(), enginetest.NewRecordingHost(), &engine.RunRequest{RunID: "r2", Inputs: map[string]any{"x": "y"}})
	if err != nil || res.Status != engine.StatusCompleted {
		t.Fatalf("Run() after restart = %+v, %v, want completed", res, err)
	}
}

func TestSupervisorChecksumMismatchOpensCircuit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the echo plugin")
	}
	t.Parallel()
	dir := buildEcho(t)
	sup := New(Config{Name: "echo", Dir: dir, Logger: testLogger(t), SHA256: strings.Repeat("00", 32),
		BackoffMin: 10 * time.Millisecond, FailureThreshold: 3, CircuitOpenFor: time.Hour})
	if err := sup.Start(t.Context()); err != nil {
		t.Fatalf("Start() error = %v", err)
	}
	t.Cleanup(sup.Stop)
	waitFor(t, "open circuit", 5*time.Second, func() bool { return sup.State() == StateDisabled })
	if _, err := sup.Engine(); errcode.Of(err) != errcode.ExternalService {
		t.Errorf("Engine() error = %v, want %s", err, errcode.ExternalService)
	}
	if pid := sup.PID(); pid != 0 {
		t.Errorf("PID() = %d, want 0", pid)
	}
}

func TestSetMissingBinary(t *testing.T) {
	t.Parallel()
	set, err := NewSet(Config{Name: "nope", Dir: t.TempDir(), Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("NewSet() error = %v", err)
	}
	err = set.Start(t.Context())
	t.Cleanup(set.Stop)
	if got := errcode.Of(err); got != errcode.ExternalService {
		t.Errorf("Start() = %v, want %s", err, errcode.ExternalService)
	}
	if diff := set.States()["nope"]; diff != StateDisabled {
		t.Errorf("States()[nope] = %q, want %q", diff, StateDisabled)
	}
	if _, err := set.Engine("other"); errcode.Of(err) != errcode.ExternalService {
		t.Errorf("Engine(other) = %v, want %s", err, errcode.ExternalService)
	}
}

const helperEnv = "REELFORGE_TEST_PDEATHSIG_HELPER"

// TestMain lets the test binary act as a host process for TestPluginDiesWithHost.
func TestMain(m *testing.M) {
	if dir := os.Getenv(helperEnv); dir != "" {
		os.Exit(pdeathsigHelper(dir))
	}
	os.Exit(m.Run())
}

// pdeathsigHelper launches the echo plugin, prints its PID and waits to be killed.
func pdeathsigHelper(dir string) int {
	c, err := engine.NewClient(engine.ClientConfig{Name: "echo", Path: filepath.Join(dir, "echo-plugin"), SHA256: engine.SkipChecksum})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(c.PID())
	time.Sleep(time.Minute) // the subject: a helper process that stays alive until the test kills it
	return 0
}

// TestPluginDiesWithHost: a plugin runs in a process group of its own and dies with its host,
// even when the host is SIGKILLed.
func TestPluginDiesWithHost(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and launches the echo plugin")
	}
	t.Parallel()
	dir := buildEcho(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("read plugin pid from helper: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("helper printed %q: %v", line, err)
	}
	// The plugin leads a process group of its own, apart from its host's.
	if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
		t.Errorf("Getpgid(plugin %d) = %d, %v, want its own group %d", pid, pgid, err, pid)
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: the host gets no chance to clean up
		t.Fatal(err)
	}
	_ = cmd.Wait() // it was killed: the error says so
	waitFor(t, "the orphaned plugin to die", 5*time.Second, func() bool { return !alive(pid) })
}

// alive reports whether pid runs (a zombie waiting for its reaper counts as dead).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist) && syscall.Kill(pid, 0) == nil
	}
	fields := strings.Fields(string(b))
	return len(fields) > 2 && fields[2] != "Z" && fields[2] != "X"
}

// The handshake refuses a plugin that reports another engine name or another contract version:
// the engine is disabled with the reason, and the plugin is not restarted.
func TestHandshakeRefusesWrongPlugin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and launches the echo plugin")
	}
	t.Parallel()
	dir := buildEcho(t)
	tests := map[string]struct {
		settings map[string]string
		want     string
	}{
		"other name":     {settings: map[string]string{"name": "impostor"}, want: `reports engine "impostor", want "echo"`},
		"other contract": {settings: map[string]string{"api_version": "99"}, want: "speaks engine contract version 99, this host speaks 1"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sup := New(Config{Name: "echo", Dir: dir, Env: []string{engine.SettingsEnvValue(tt.settings)}, Logger: testLogger(t),
				BackoffMin: 10 * time.Millisecond})
			if err := sup.Start(t.Context()); err != nil {
				t.Fatalf("Start() error = %v", err)
			}
			t.Cleanup(sup.Stop)
			if st := sup.State(); st != StateDisabled {
				t.Fatalf("State() = %s, want disabled", st)
			}
			if r := sup.Reason(); !strings.Contains(r, tt.want) {
				t.Errorf("Reason() = %q, want it to contain %q", r, tt.want)
			}
			if _, err := sup.Engine(); errcode.Of(err) != errcode.ExternalService {
				t.Errorf("Engine() error = %v, want EXTERNAL_SERVICE_ERROR", err)
			}
			time.Sleep(100 * time.Millisecond) // ten back-offs: a restart would have happened
			if n, pid := sup.Restarts(), sup.PID(); n != 0 || pid != 0 {
				t.Errorf("Restarts(), PID() = %d, %d, want 0, 0: a refused plugin is not restarted", n, pid)
			}
		})
	}
}

// countingEngine counts the Callback and Cancel calls that reach it.
type countingEngine struct {
	engine.Base
	callbacks, cancels int
}

func (c *countingEngine) Info(context.Context) (*engine.Info, error) { return &engine.Info{}, nil }
func (c *countingEngine) Run(context.Context, engine.Host, *engine.RunRequest) (*engine.RunResult, error) {
	return &engine.RunResult{Status: engine.StatusCompleted}, nil
}
func (c *countingEngine) Callback(context.Context, engine.Host, *engine.CallbackRequest) (*engine.RunResult, error) {
	c.callbacks++
	return &engine.RunResult{Status: engine.StatusCompleted}, nil
}
func (c *countingEngine) Cancel(context.Context, *engine.CancelRequest) error {
	c.cancels++
	return nil
}

// Callback and Cancel reach a plugin only when its Info declares them.
func TestDeclaredCapabilities(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		caps                    []string
		wantCallbacks, wantCanc int
	}{
		"none":     {caps: nil},
		"cancel":   {caps: []string{engine.CapCancel}, wantCanc: 1},
		"callback": {caps: []string{engine.CapCallbacks}, wantCallbacks: 1},
		"both":     {caps: []string{engine.CapCallbacks, engine.CapCancel}, wantCallbacks: 1, wantCanc: 1},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			impl := &countingEngine{}
			eng := declared(impl, &engine.Info{Capabilities: tt.caps})
			_, err := eng.Callback(t.Context(), nil, &engine.CallbackRequest{RunID: "r"})
			if tt.wantCallbacks == 0 && errcode.Of(err) != errcode.WorkflowInvalidState {
				t.Errorf("Callback() on an engine without callbacks = %v, want WORKFLOW_INVALID_STATE", err)
			}
			if err := eng.Cancel(t.Context(), &engine.CancelRequest{RunID: "r"}); err != nil {
				t.Errorf("Cancel() = %v", err)
			}
			if impl.callbacks != tt.wantCallbacks || impl.cancels != tt.wantCanc {
				t.Errorf("calls reaching the engine: callbacks %d, cancels %d, want %d, %d", impl.callbacks, impl.cancels, tt.wantCallbacks, tt.wantCanc)
			}
		})
	}
}

// An engine that declares engine.CapToolHealth is ready only while its tool answers: unconfigured
// when it has none, degraded (and routed to the fallback, not restarted) while the tool is down,
// ready again when it answers.
func TestToolHealth(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and launches the echo plugin")
	}
	t.Parallel()
	dir := buildEcho(t)

	t.Run("unconfigured", func(t *testing.T) {
		t.Parallel()
		sup := New(Config{Name: "echo", Dir: dir, Env: []string{engine.SettingsEnvValue(map[string]string{"tool_url": "unconfigured"})},
			Logger: testLogger(t)})
		if err := sup.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(sup.Stop)
		if st, reason := sup.Detail(); st != DetailUnconfigured || !strings.Contains(reason, "tool_url is not set") {
			t.Errorf("Detail() = %s, %q, want unconfigured and the reason", st, reason)
		}
		if st := sup.State(); st != StateDisabled {
			t.Errorf("State() = %s, want disabled", st)
		}
		if _, err := sup.Engine(); err == nil {
			t.Error("Engine() of an unconfigured engine = nil error, want the fallback")
		}
	})

	t.Run("tool down and back", func(t *testing.T) {
		t.Parallel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		serve := func(ln net.Listener) { go http.Serve(ln, http.NotFoundHandler()) } // ends when ln closes
		serve(ln)
		sup := New(Config{Name: "echo", Dir: dir, Env: []string{engine.SettingsEnvValue(map[string]string{"tool_url": "http://" + addr})},
			Logger: testLogger(t), HealthInterval: 50 * time.Millisecond})
		if err := sup.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(sup.Stop)
		if st, reason := sup.Detail(); st != DetailReady {
			t.Fatalf("Detail() with the tool up = %s, %q, want ready", st, reason)
		}
		pid := sup.PID()
		ln.Close()
		waitFor(t, "degraded", 10*time.Second, func() bool { st, _ := sup.Detail(); return st == DetailDegraded })
		if _, reason := sup.Detail(); !strings.Contains(reason, "the echo tool does not answer") {
			t.Errorf("Detail() reason = %q, want the tool's check", reason)
		}
		if _, err := sup.Engine(); err == nil {
			t.Error("Engine() while the tool is down = nil error, want the fallback")
		}
		if sup.State() != StateDegraded || sup.PID() != pid || sup.Restarts() != 0 {
			t.Errorf("State(), PID(), Restarts() = %s, %d, %d; want degraded, %d, 0: a tool down is no reason to restart the plugin",
				sup.State(), sup.PID(), sup.Restarts(), pid)
		}
		ln2, err := net.Listen("tcp", addr)
		if err != nil {
			t.Skipf("cannot listen on %s again: %v", addr, err)
		}
		serve(ln2)
		t.Cleanup(func() { ln2.Close() })
		waitFor(t, "ready", 10*time.Second, func() bool { st, _ := sup.Detail(); return st == DetailReady })
		if _, err := sup.Engine(); err != nil {
			t.Errorf("Engine() with the tool back = %v", err)
		}
	})

	// With a health route, a tool that answers 404 there is not ready: degraded with its answer,
	// yet still offered runs (it may take them without having a health route); 2xx there is ready.
	t.Run("tool answers but not at its health route", func(t *testing.T) {
		t.Parallel()
		var healthy atomic.Bool
		tool := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/health" && healthy.Load() {
				_, _ = w.Write([]byte(`{"status":"ok"}`))
				return
			}
			http.NotFound(w, r)
		}))
		t.Cleanup(tool.Close)
		sup := New(Config{Name: "echo", Dir: dir, Env: []string{engine.SettingsEnvValue(map[string]string{"tool_url": tool.URL, "tool_health_path": "/health"})},
			Logger: testLogger(t), HealthInterval: 50 * time.Millisecond})
		if err := sup.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(sup.Stop)
		if st, reason := sup.Detail(); st != DetailDegraded || !strings.Contains(reason, "answered 404") {
			t.Errorf("Detail() with 404 at the health route = %s, %q, want degraded with the answer", st, reason)
		}
		if sup.State() != StateDegraded {
			t.Errorf("State() = %s, want degraded", sup.State())
		}
		if _, err := sup.Engine(); err != nil {
			t.Errorf("Engine() of a tool that answers = %v, want the engine (its runs still go to it)", err)
		}
		healthy.Store(true)
		waitFor(t, "ready", 10*time.Second, func() bool { st, _ := sup.Detail(); return st == DetailReady })
	})
}

// A run in flight when the host closes the plugin's client (the supervisor's Kill after the plugin
// stopped answering) fails as the plugin being unavailable, so the run falls back, never as
// WORKFLOW_CANCELLED, which nobody asked for.
func TestClosedClientIsUnavailableNotCancelled(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and launches the echo plugin")
	}
	t.Parallel()
	dir := buildEcho(t)
	sum, err := FileSHA256(filepath.Join(dir, "echo-plugin"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := engine.NewClient(engine.ClientConfig{Name: "echo", Path: filepath.Join(dir, "echo-plugin"), SHA256: sum})
	if err != nil {
		t.Fatal(err)
	}
	host := enginetest.NewRecordingHost()
	done := make(chan error, 1)
	go func() {
		_, err := c.Engine().Run(t.Context(), host, &engine.RunRequest{RunID: "r", Inputs: map[string]any{"sleep_ms": 60000.0}})
		done <- err
	}()
	waitFor(t, "the run's first step", 10*time.Second, func() bool { return len(host.Steps()) > 0 })
	c.Kill()
	err = <-done
	if errcode.Of(err) != errcode.ExternalService {
		t.Fatalf("Run() after its client was closed = %v (%s), want EXTERNAL_SERVICE_ERROR", err, errcode.Of(err))
	}
}
