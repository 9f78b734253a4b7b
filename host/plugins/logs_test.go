package plugins

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/reelforge/reelforge/internal/testtool"
	"github.com/reelforge/reelforge/sdk/engine"
)

// TestPluginLogsCarryEngine: go-plugin's lines and the plugin's own (read from its stderr) reach
// the host's slog stream with the engine's name.
func TestPluginLogsCarryEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and launches the echo plugin")
	}
	t.Parallel()
	dir := buildEcho(t)
	var buf testtool.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	sup := New(Config{Name: "echo", Dir: dir, Logger: log, HealthInterval: 100 * time.Millisecond})
	if err := sup.Start(t.Context()); err != nil {
		t.Fatalf("Start() error = %v", err)
	}
	waitFor(t, "ready", 10*time.Second, func() bool { return sup.State() == StateReady })
	time.Sleep(300 * time.Millisecond) // a few health pings
	sup.Stop()

	fromPlugin := 0
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		if rec["engine"] != "echo" {
			t.Errorf("log line without engine=echo: %s", line)
		}
		if _, ok := rec["plugin"]; ok {
			fromPlugin++
		}
	}
	if fromPlugin == 0 {
		t.Errorf("no go-plugin or plugin log line reached the host's log:\n%s", buf.String())
	}
}

func TestHCLogAdapterNames(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	base := slog.New(slog.NewJSONHandler(&buf, nil)).With("engine", "graph")
	newHCLog(base, "").Named("engine.graph").With("k", "v").Info("hello", "n", 1)
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]any{"engine": "graph", "plugin": "engine.graph", "k": "v", "n": float64(1), "msg": "hello"} {
		if rec[key] != want {
			t.Errorf("%s = %v, want %v (%s)", key, rec[key], want, buf.String())
		}
	}
}

// go-plugin logs the binary's path under its own "plugin" key ("plugin process exited"): the
// adapter's "plugin" is the logger's name, so the line would carry the key twice.
func TestHCLogAdapterNoDuplicateKey(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	newHCLog(slog.New(slog.NewJSONHandler(&buf, nil)), "engine.generators").
		Info("plugin process exited", "plugin", "bin/plugins/generators-plugin", "id", 42)
	line := buf.String()
	if n := strings.Count(line, `"plugin":`); n != 1 {
		t.Errorf("%d \"plugin\" keys in %s, want 1", n, line)
	}
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatal(err)
	}
	if rec["plugin"] != "engine.generators" || rec["path"] != "bin/plugins/generators-plugin" {
		t.Errorf("plugin, path = %v, %v; want engine.generators, bin/plugins/generators-plugin", rec["plugin"], rec["path"])
	}
}

// The supervisor checks an engine's external tool every HealthInterval (3 s by default): its log
// says when the tool's state changes, not at every check, and an engine with no tool configured
// (the default setup) is an INFO, not a warning.
func TestToolCheckLogsChangesOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and launches the echo plugin")
	}
	t.Parallel()
	dir := buildEcho(t)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + closed.Addr().String()
	closed.Close() // nothing answers there
	for name, tc := range map[string]struct {
		toolURL string
		level   string
	}{
		"unconfigured": {"unconfigured", "INFO"},
		"tool down":    {down, "WARN"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var buf testtool.Buffer
			log := slog.New(slog.NewJSONHandler(&buf, nil))
			sup := New(Config{Name: "echo", Dir: dir, Env: []string{engine.SettingsEnvValue(map[string]string{"tool_url": tc.toolURL})},
				Logger: log, HealthInterval: 20 * time.Millisecond})
			if err := sup.Start(t.Context()); err != nil {
				t.Fatal(err)
			}
			time.Sleep(500 * time.Millisecond) // many checks
			sup.Stop()
			var lines []string
			for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
				var rec map[string]any
				if err := json.Unmarshal([]byte(line), &rec); err != nil {
					t.Fatalf("log line is not JSON: %q", line)
				}
				if msg, _ := rec["msg"].(string); strings.Contains(msg, "external tool") {
					lines = append(lines, line)
					if rec["level"] != tc.level {
						t.Errorf("level %v, want %s: %s", rec["level"], tc.level, line)
					}
				}
			}
			if len(lines) != 1 {
				t.Errorf("%d lines about the external tool, want 1 (the first check):\n%s", len(lines), strings.Join(lines, "\n"))
			}
		})
	}
}
