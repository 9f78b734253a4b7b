// Package examples_test runs the examples as their users would. TestGreeterEngine follows
// sdk/README.md with examples/greeter-engine (its code): it runs the example module's own tests,
// builds its plugin, installs it with its engine entry (sha256 pinned) and workflow manifest,
// starts the real host and runs the workflow through the plugin; then it SIGKILLs the plugin, sees
// the next run degrade to the node engine with the reason in its trace, and sees the plugin come
// back.
package examples_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reelforge/reelforge/host/store/pgstore"
	"github.com/reelforge/reelforge/host/store/storetest"
	"github.com/reelforge/reelforge/internal/testtool"
)

func TestGreeterEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the example module and the host, and starts them")
	}
	example, err := filepath.Abs("greeter-engine")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	pluginDir, manifestDir := filepath.Join(tmp, "plugins"), filepath.Join(tmp, "manifests")
	for _, d := range []string{pluginDir, filepath.Join(manifestDir, "engines")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	// The author's steps: test with enginetest, build the plugin into PLUGIN_DIR.
	goCmd(t, example, "test", "-count=1", "./...")
	plugin := filepath.Join(pluginDir, "greeter-plugin")
	goCmd(t, example, "build", "-o", plugin, "./cmd/greeter-plugin")
	host := filepath.Join(tmp, "reelforge")
	goCmd(t, ".", "build", "-tags", "sqlite_fts5", "-o", host, "github.com/reelforge/reelforge/host")

	// The operator's: the engine entry with the binary's sha256 pinned, and the workflow manifest.
	entry, err := os.ReadFile(filepath.Join(example, "manifests", "engines", "greeter.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	entry = append(entry, []byte("sha256: "+fileSHA256(t, plugin)+"\n")...)
	writeFile(t, filepath.Join(manifestDir, "engines", "greeter.yaml"), entry)
	wf, err := os.ReadFile(filepath.Join(example, "manifests", "greeting.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(manifestDir, "greeting.yaml"), wf)
	sharedManifests := manifestDir

	databases := map[string]string{"sqlite": ""}
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		databases["postgres"] = postgresSchemaURL(t, u)
	}
	for name, dbURL := range databases {
		t.Run(name, func(t *testing.T) {
			// A folder of manifests per database: the test adds workflows to it.
			manifestDir := filepath.Join(t.TempDir(), "manifests")
			if err := os.CopyFS(manifestDir, os.DirFS(sharedManifests)); err != nil {
				t.Fatal(err)
			}
			greeterEndToEnd(t, host, pluginDir, manifestDir, wf, dbURL)
		})
	}
}

// greeterEndToEnd starts the host on dbURL ("" for SQLite) with the greeter installed and plays
// the plugin author and the operator: runs, a kill, the restart, reloads.
func greeterEndToEnd(t *testing.T, host, pluginDir, manifestDir string, wf []byte, dbURL string) {
	h := startHost(t, host, map[string]string{"DATA_DIR": filepath.Join(t.TempDir(), "data"), "MANIFEST_DIR": manifestDir,
		"PLUGIN_DIR": pluginDir, "DATABASE_URL": dbURL, "GREETING": "hello"})
	h.waitEngine(t, "greeter", "ready")
	token := h.register(t)

	// 1. Through the plugin.
	run := h.runGreeting(t, token, "greeting", "Ada")
	if run.status["engine"] != "greeter" || run.status["degraded"] != nil {
		t.Errorf("first run: engine %v, degraded %v, want greeter, none", run.status["engine"], run.status["degraded"])
	}
	if got := run.outputs["greeting"]; got != "hello Ada" {
		t.Errorf("first run: greeting = %v, want \"hello Ada\"", got)
	}
	if len(run.trace) != 1 || run.trace[0]["engine"] != "greeter" || run.trace[0]["step_id"] != "greet" {
		t.Errorf("first run: trace = %v, want one greet step of engine greeter", run.trace)
	}

	// 2. SIGKILL the plugin: the next run degrades to node, and its trace says why.
	pid := pluginPID(t, h.cmd.Process.Pid, "greeter-plugin", 0)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	run = h.runGreeting(t, token, "greeting", "Bob")
	reason, _ := run.status["degraded"].(string)
	if run.status["engine"] != "node" || !strings.Contains(reason, "greeter") {
		t.Errorf("run after the kill: engine %v, degraded %q, want node and a reason naming greeter", run.status["engine"], reason)
	}
	t.Logf("run after the kill: engine %v, degraded %q", run.status["engine"], reason)
	if len(run.trace) == 0 {
		t.Fatal("run after the kill: empty trace")
	}
	for _, st := range run.trace {
		if st["engine"] != "node" || !strings.Contains(fmt.Sprint(st["degraded"]), "greeter") {
			t.Errorf("run after the kill: trace step %v, want engine node and the reason", st)
		}
	}

	// 3. The host restarts the plugin (a new process, then ready: /health may say ready before
	// the supervisor noticed the kill); runs go through it again.
	pluginPID(t, h.cmd.Process.Pid, "greeter-plugin", pid)
	h.waitEngine(t, "greeter", "ready")
	run = h.runGreeting(t, token, "greeting", "Cy")
	if run.status["engine"] != "greeter" || run.outputs["greeting"] != "hello Cy" {
		t.Errorf("run after the restart: engine %v, outputs %v, want greeter and \"hello Cy\"", run.status["engine"], run.outputs)
	}

	// 4. Reload without restart: a new workflow, checked with `manifests check`, then SIGHUP.
	writeFile(t, filepath.Join(manifestDir, "welcome.yaml"), []byte(strings.Replace(string(wf), "id: greeting", "id: welcome", 1)))
	if out, err := exec.Command(host, "manifests", "check", manifestDir).CombinedOutput(); err != nil || !strings.Contains(string(out), "ok: 2 workflows") {
		t.Errorf("manifests check of a valid folder = %v\n%s", err, out)
	}
	if err := h.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the welcome workflow after SIGHUP", func() bool { return h.listed(t, token, "welcome") })
	if run = h.runGreeting(t, token, "welcome", "Di"); run.outputs["greeting"] != "hello Di" {
		t.Errorf("run of the reloaded workflow: outputs %v, want \"hello Di\"", run.outputs)
	}

	// 5. An invalid set is refused with file and field, by the check and by SIGHUP; the old stays.
	broken := filepath.Join(manifestDir, "broken.yaml")
	writeFile(t, broken, []byte(strings.Replace(strings.Replace(string(wf), "id: greeting", "id: broken", 1), "engine: greeter", "engine: greeter2", 1)))
	wantErr := broken + `: engine: unknown engine "greeter2"`
	if out, err := exec.Command(host, "manifests", "check", manifestDir).CombinedOutput(); err == nil || !strings.Contains(string(out), wantErr) {
		t.Errorf("manifests check of an invalid folder = %v\n%s\nwant exit 1 and %q", err, out, wantErr)
	}
	if err := h.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the refused reload in the log", func() bool {
		// The text log quotes the error: its own quotes come escaped.
		return strings.Contains(h.log(), "manifests reload refused") && strings.Contains(h.log(), broken+": engine: unknown engine")
	})
	if h.listed(t, token, "broken") || !h.listed(t, token, "welcome") {
		t.Error("after a refused reload the workflows are not the previous set")
	}
}

// postgresSchemaURL makes a fresh schema in the database at url (migrated by pgstore) and returns
// url with that schema first on the search path, for the host's DATABASE_URL.
func postgresSchemaURL(t *testing.T, url string) string {
	t.Helper()
	schema := storetest.SchemaName()
	d, err := pgstore.Open(context.Background(), url, pgstore.Options{Schema: schema})
	if err != nil {
		t.Fatalf("open PostgreSQL: %v", err)
	}
	d.Close()
	// Registered before the host's own clean-up, so it runs after the host has stopped.
	t.Cleanup(func() {
		storetest.DropSchema(url, schema)
	})
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + "search_path=" + schema + "%2Cpublic"
}

// TestReadmeIsTheExample: every file sdk/README.md shows (a line "`path`:" before its code block)
// is the example's file of that path, byte for byte.
func TestReadmeIsTheExample(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join("..", "sdk", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?ms)^`([^`\n]+)`:\n\n```[a-z]*\n(.*?\n)```").FindAllSubmatch(readme, -1)
	if len(blocks) < 5 {
		t.Fatalf("sdk/README.md shows %d files, want the example's five", len(blocks))
	}
	for _, b := range blocks {
		path := string(b[1])
		want, err := os.ReadFile(filepath.Join("greeter-engine", path))
		if err != nil {
			t.Errorf("sdk/README.md shows %s, which the example does not have: %v", path, err)
			continue
		}
		if string(b[2]) != string(want) {
			t.Errorf("sdk/README.md's %s differs from examples/greeter-engine/%s", path, path)
		}
	}
}

// goCmd runs the go command in dir, failing the test with its output.
func goCmd(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s (in %s): %v\n%s", strings.Join(args, " "), dir, err, out)
	}
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// pluginPID finds the live child process of parent whose command is name, other than not.
func pluginPID(t *testing.T, parent int, name string, not int) int {
	t.Helper()
	var found int
	waitUntil(t, "a "+name+" process", func() bool {
		dirs, _ := filepath.Glob("/proc/[0-9]*")
		for _, d := range dirs {
			stat, err := os.ReadFile(filepath.Join(d, "stat"))
			if err != nil {
				continue
			}
			// pid (comm) state ppid ...
			s := string(stat)
			end := strings.LastIndexByte(s, ')')
			if end < 0 || !strings.Contains(s[:end], "("+name[:min(len(name), 15)]) {
				continue
			}
			f := strings.Fields(s[end+1:])
			pid, _ := strconv.Atoi(filepath.Base(d))
			if len(f) > 1 && f[0] != "Z" && f[1] == strconv.Itoa(parent) && pid != not {
				found = pid
				return true
			}
		}
		return false
	})
	return found
}

// waitUntil polls cond until it holds; it gives up after a minute, which no step here comes near.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testtool.Eventually(t, time.Minute, what, cond)
}

type hostProc struct {
	cmd  *exec.Cmd
	base string
	mu   sync.Mutex // guards logs, written by the host's output copier
	logs *bytes.Buffer
}

// lockedWriter writes to a hostProc's logs under its lock.
type lockedWriter struct{ h *hostProc }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.h.mu.Lock()
	defer w.h.mu.Unlock()
	return w.h.logs.Write(p)
}

// startHost starts the host binary on a free port with env added to the environment; it is
// stopped (SIGTERM) at the end of the test and its log shown when the test failed.
func startHost(t *testing.T, bin string, env map[string]string) *hostProc {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port), "LOG_FORMAT=text")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	h := &hostProc{cmd: cmd, base: fmt.Sprintf("http://127.0.0.1:%d", port), logs: &bytes.Buffer{}}
	cmd.Stdout, cmd.Stderr = lockedWriter{h}, lockedWriter{h}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("host log:\n%s", h.log())
		}
	})
	waitUntil(t, "the host's /health", func() bool {
		res, err := http.Get(h.base + "/health")
		if err == nil {
			res.Body.Close()
		}
		return err == nil && res.StatusCode == http.StatusOK
	})
	return h
}

// call sends a JSON request and decodes the JSON answer.
func (h *hostProc) call(t *testing.T, method, path, token string, body any) (int, map[string]any) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, h.base+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	out := map[string]any{}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		t.Fatalf("%s %s: answer is not JSON: %v", method, path, err)
	}
	return res.StatusCode, out
}

func (h *hostProc) waitEngine(t *testing.T, name, state string) {
	t.Helper()
	waitUntil(t, "engine "+name+" "+state, func() bool {
		_, body := h.call(t, "GET", "/health", "", nil)
		engines, _ := body["engines"].(map[string]any)
		return engines[name] == state
	})
}

func (h *hostProc) register(t *testing.T) string {
	t.Helper()
	status, body := h.call(t, "POST", "/api/auth/register", "", map[string]any{
		"email": "author@example.com", "password": "greeter-password-1", "username": "author"})
	token, _ := body["token"].(string)
	if status != http.StatusCreated || token == "" {
		t.Fatalf("register = %d %v", status, body)
	}
	return token
}

type greetingRun struct {
	status  map[string]any
	outputs map[string]any
	trace   []map[string]any
}

// listed reports whether GET /api/workflow/manifests lists workflow id.
func (h *hostProc) listed(t *testing.T, token, id string) bool {
	t.Helper()
	_, body := h.call(t, "GET", "/api/workflow/manifests", token, nil)
	ms, _ := body["manifests"].([]any)
	for _, m := range ms {
		if mm, ok := m.(map[string]any); ok && mm["id"] == id {
			return true
		}
	}
	return false
}

// log returns what the host logged so far.
func (h *hostProc) log() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.logs.String()
}

// runGreeting starts workflow (of the greeter engine) and waits until it completes.
func (h *hostProc) runGreeting(t *testing.T, token, workflow, name string) greetingRun {
	t.Helper()
	status, body := h.call(t, "POST", "/api/workflow/start", token, map[string]any{"workflow": workflow, "inputs": map[string]any{"name": name}})
	id, _ := body["run_id"].(string)
	if status != http.StatusOK && status != http.StatusCreated && status != http.StatusAccepted || id == "" {
		t.Fatalf("start = %d %v", status, body)
	}
	var run greetingRun
	waitUntil(t, "run "+id+" to end", func() bool {
		_, run.status = h.call(t, "GET", "/api/workflow/status/"+id, token, nil)
		s := run.status["status"]
		return s == "completed" || s == "failed" || s == "cancelled"
	})
	if run.status["status"] != "completed" {
		t.Fatalf("run %s = %v, want completed", id, run.status)
	}
	_, res := h.call(t, "GET", "/api/workflow/result/"+id, token, nil)
	run.outputs, _ = res["outputs"].(map[string]any)
	_, tr := h.call(t, "GET", "/api/workflow/trace/"+id, token, nil)
	steps, _ := tr["trace"].([]any)
	for _, s := range steps {
		if m, ok := s.(map[string]any); ok {
			run.trace = append(run.trace, m)
		}
	}
	return run
}
