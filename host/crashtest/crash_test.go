package crashtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
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

	"github.com/reelforge/reelforge/internal/eventsink"
)

// bound is how long recovered work may take after the restart before it counts as stuck: far
// more than the renders take, far less than any time-out (videogen's is 10 minutes).
const bound = 3 * time.Minute

func TestCrashRounds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills real host processes")
	}
	rounds := 1
	if v := os.Getenv("CRASH_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("CRASH_ROUNDS=%q", v)
		}
		rounds = n
	}
	bin := build(t)
	dbs := map[string]string{"sqlite": ""}
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		dbs["postgres"] = u
	}
	for name, url := range dbs {
		t.Run(name, func(t *testing.T) {
			h := newHost(t, bin, url, eventsink.New(t), newEmail())
			var total counts
			for i := range rounds {
				c := h.round(t, i)
				t.Logf("round %d: %s", i+1, c)
				total.add(c)
			}
			t.Logf("%d rounds: %s", rounds, total)
			if total.bad() {
				t.Errorf("%s after %d rounds: want every count zero", total, rounds)
			}
		})
	}
}

// counts are the outcomes the test checks, over acknowledged work.
type counts struct {
	runs, docs, events                   int // acknowledged
	lost, duplicated, stuck, orphaned    int // must be zero
	failedRuns, failedDocs, eventRepeats int // reported: failed with a reason, delivered again (at least once)
	toolsAtKill                          int // render and speech processes running when the host was killed
}

func (c *counts) add(o counts) {
	c.runs += o.runs
	c.docs += o.docs
	c.events += o.events
	c.lost += o.lost
	c.duplicated += o.duplicated
	c.stuck += o.stuck
	c.orphaned += o.orphaned
	c.failedRuns += o.failedRuns
	c.failedDocs += o.failedDocs
	c.eventRepeats += o.eventRepeats
	c.toolsAtKill += o.toolsAtKill
}

func (c counts) bad() bool { return c.lost+c.duplicated+c.stuck+c.orphaned > 0 }

func (c counts) String() string {
	return fmt.Sprintf("%d runs, %d documents, %d events acknowledged: lost %d, duplicated %d, stuck %d, orphaned %d "+
		"(tools running at the kill %d; runs failed %d, documents failed %d, events delivered again %d)", c.runs, c.docs, c.events,
		c.lost, c.duplicated, c.stuck, c.orphaned, c.toolsAtKill, c.failedRuns, c.failedDocs, c.eventRepeats)
}

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// build builds the host once for every test of the package, into a folder removed by TestMain.
func build(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		builtBin = filepath.Join(binDir, "reelforge")
		// The generators plugin does the renders and speech; the other engines run in the host
		// (their binaries are not in PLUGIN_DIR).
		for out, pkg := range map[string]string{builtBin: "../../host",
			filepath.Join(pluginDir(), "generators-plugin"): "../../plugins/generators/cmd/generators-plugin"} {
			cmd := exec.Command("go", "build", "-o", out, pkg)
			cmd.Env = append(os.Environ(), "GOFLAGS=-tags=sqlite_fts5")
			if b, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

var binDir string

// pluginDir is the hosts' PLUGIN_DIR.
func pluginDir() string { return filepath.Join(binDir, "plugins") }

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "crashtest-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// host is one DATA_DIR and database, started and killed round after round.
type host struct {
	bin, dataDir, dbURL string
	port                int
	proc                *exec.Cmd
	token               string
	recv                *eventsink.Sink
	log                 *os.File
}

// newEmail is a user of its own for each test: a database may hold earlier tests' users.
func newEmail() string { return fmt.Sprintf("crash-%x@example.com", rand.Uint64()) }

// newHost starts a host on dbURL with a DATA_DIR of its own, as the user email; it creates that
// user first unless create is false (a second host on the same database finds it there).
func newHost(t *testing.T, bin, dbURL string, recv *eventsink.Sink, email string, create ...bool) *host {
	t.Helper()
	return newHostIn(t, bin, dbURL, t.TempDir(), recv, email, create...)
}

// newHostIn is newHost with the DATA_DIR dataDir; the host's log is written apart from it.
func newHostIn(t *testing.T, bin, dbURL, dataDir string, recv *eventsink.Sink, email string, create ...bool) *host {
	t.Helper()
	h := &host{bin: bin, dataDir: dataDir, dbURL: dbURL, port: freePort(t), recv: recv}
	log, err := os.Create(filepath.Join(t.TempDir(), "host.log"))
	if err != nil {
		t.Fatal(err)
	}
	h.log = log
	t.Cleanup(func() {
		h.stop()
		log.Close()
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			t.Logf("host log (last 4 KB):\n%s", b[max(0, len(b)-4096):])
		}
	})
	if len(create) == 0 || create[0] {
		user := exec.Command(bin, "user", "create", "--email", email, "--password", "crash-test-password", "--role", "admin")
		user.Env = h.env()
		if out, err := user.CombinedOutput(); err != nil {
			t.Fatalf("user create: %v\n%s", err, out)
		}
	}
	h.start(t)
	var login struct {
		Data struct{ Token string } `json:"data"`
	}
	if st := h.call(t, "POST", "/api/auth/login", map[string]any{"email": email, "password": "crash-test-password"}, &login); st != 200 {
		t.Fatalf("login: %d", st)
	}
	h.token = login.Data.Token
	return h
}

func (h *host) env() []string {
	return append(os.Environ(), "PORT="+strconv.Itoa(h.port), "DATA_DIR="+h.dataDir, "DATABASE_URL="+h.dbURL,
		"PLUGINS_ENABLED=true", "PLUGIN_DIR="+pluginDir(), "MANIFEST_DIR=../../manifests", "LOG_FORMAT=text", "LEASE_MS=3000",
		"RATE_LIMIT_PER_MINUTE=100000", "AUTOMATION_ENABLE_NOTIFICATIONS=true", "AUTOMATION_EVENT_WEBHOOK_URL="+h.recv.URL,
		"AUTOMATION_WEBHOOK_SECRET=crash", "AUTOMATION_BATCH_INTERVAL=200",
		"JWT_SECRET=crash-test-jwt-secret-crash-test-jwt-secret", "CALLBACK_SECRET=crash-test-callback-secret-0123456789")
}

func (h *host) start(t *testing.T) {
	t.Helper()
	cmd := exec.Command(h.bin)
	cmd.Env = h.env()
	cmd.Stdout, cmd.Stderr = h.log, h.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h.proc = cmd
	deadline := time.Now().Add(60 * time.Second)
	for {
		res, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/health", h.port))
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the host did not answer /health within a minute")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (h *host) kill() {
	if h.proc != nil {
		_ = h.proc.Process.Signal(syscall.SIGKILL)
		_ = h.proc.Wait()
		h.proc = nil
	}
}

func (h *host) stop() {
	if h.proc != nil {
		_ = h.proc.Process.Signal(syscall.SIGTERM)
		_ = h.proc.Wait()
		h.proc = nil
	}
}

// call sends a JSON request and decodes the answer into out; it answers the status (0 when the
// host did not answer: killed meanwhile).
func (h *host) call(t *testing.T, method, path string, body, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, fmt.Sprintf("http://127.0.0.1:%d%s", h.port, path), rd)
	req.Header.Set("Content-Type", "application/json")
	if h.token != "" {
		req.Header.Set("Authorization", "Bearer "+h.token)
	}
	res, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return 0
	}
	defer res.Body.Close()
	if out != nil {
		_ = json.NewDecoder(res.Body).Decode(out)
	}
	return res.StatusCode
}

// round starts work, kills the host at a random moment, starts it again and counts the outcome.
func (h *host) round(t *testing.T, i int) counts {
	t.Helper()
	w := h.load(t, i)
	time.Sleep(time.Duration(1500+rand.IntN(3000)) * time.Millisecond)
	tools := orphans(h.dataDir)
	h.kill()
	w.stop()
	time.Sleep(500 * time.Millisecond) // the kernel's parent-death signals reach the children
	orphaned := orphans(h.dataDir)
	h.start(t)
	c := h.settle(t, w)
	c.toolsAtKill, c.orphaned = tools, orphaned
	return c
}

// work is what load sent and the host acknowledged.
type work struct {
	stop   func()
	mu     sync.Mutex
	runIDs []string
	docs   map[string]string // acknowledged document id -> its text's hash
}

func (w *work) merge(o *work) {
	w.runIDs = append(w.runIDs, o.runIDs...)
	for k, v := range o.docs {
		w.docs[k] = v
	}
}

// load starts runs (three renders among them) and ingests on h until stop.
func (h *host) load(t *testing.T, i int) *work {
	t.Helper()
	w := &work{docs: map[string]string{}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	w.stop = func() { cancel(); wg.Wait() }
	for k := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ctx.Err() == nil; n++ {
				wf := "content_plan_workflow"
				if k == 0 && n < 3 {
					wf = "video"
				}
				var out struct {
					RunID string `json:"run_id"`
				}
				if st := h.call(t, "POST", "/api/workflow/start", map[string]any{"workflow": wf,
					"inputs": map[string]any{"topic": fmt.Sprintf("tea %d-%d-%d-%d", h.port, i, k, n)}}, &out); st == 201 || st == 200 {
					w.mu.Lock()
					w.runIDs = append(w.runIDs, out.RunID)
					w.mu.Unlock()
				}
				time.Sleep(50 * time.Millisecond)
			}
		}()
	}
	// Ingests: texts large enough to be caught mid-ingest now and then.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 0; ctx.Err() == nil; n++ {
			text := strings.Repeat(fmt.Sprintf("Host %d round %d document %d speaks of quokka lanterns at dusk. ", h.port, i, n), 400)
			sum := sha256.Sum256([]byte(text))
			var out struct {
				Data struct {
					Document struct{ ID string } `json:"document"`
				} `json:"data"`
			}
			if st := h.call(t, "POST", "/api/knowledge/text", map[string]any{"text": text, "source_name": "crash"}, &out); st == 201 || st == 200 {
				w.mu.Lock()
				w.docs[out.Data.Document.ID] = hex.EncodeToString(sum[:])
				w.mu.Unlock()
			}
		}
	}()
	return w
}

// settle waits, through h, for the acknowledged work of w to end, and counts how it ended.
func (h *host) settle(t *testing.T, w *work) counts {
	t.Helper()
	var c counts
	runIDs, docs := w.runIDs, w.docs
	// Documents caught mid-ingest are failed as interrupted; sending them again ingests them.
	c.runs, c.docs = len(runIDs), len(docs)
	deadline := time.Now().Add(bound)
	pending := map[string]bool{}
	for _, id := range runIDs {
		pending[id] = true
	}
	for len(pending) > 0 && time.Now().Before(deadline) {
		for id := range pending {
			var out struct {
				Status string `json:"status"`
			}
			st := h.call(t, "GET", "/api/workflow/status/"+id, nil, &out)
			switch {
			case st == 404:
				c.lost++
				delete(pending, id)
			case out.Status == "completed":
				delete(pending, id)
			case out.Status == "failed" || out.Status == "cancelled":
				c.failedRuns++
				delete(pending, id)
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	c.stuck += len(pending)
	for id := range pending {
		t.Logf("stuck run %s", id)
	}
	// Every acknowledged document is indexed, once per hash.
	var list struct {
		Data struct {
			Documents []struct {
				ID          string `json:"id"`
				FileHash    string `json:"file_hash"`
				ParseStatus string `json:"parse_status"`
			} `json:"documents"`
		} `json:"data"`
	}
	h.call(t, "GET", "/api/knowledge/documents?limit=100&page=1", nil, &list)
	seen := map[string]int{}
	byID := map[string]string{}
	for page := 2; len(list.Data.Documents) > 0; page++ {
		for _, d := range list.Data.Documents {
			seen[d.FileHash]++
			byID[d.ID] = d.ParseStatus
			if d.ParseStatus == "parsing" || d.ParseStatus == "uploading" {
				c.stuck++
				t.Logf("stuck document %s (%s)", d.ID, d.ParseStatus)
			}
		}
		list.Data.Documents = nil
		h.call(t, "GET", fmt.Sprintf("/api/knowledge/documents?limit=100&page=%d", page), nil, &list)
	}
	for _, n := range seen {
		if n > 1 {
			c.duplicated += n - 1
		}
	}
	for id := range docs {
		switch byID[id] {
		case "indexed":
		case "failed":
			c.failedDocs++
		default:
			c.lost++
			t.Logf("lost document %s", id)
		}
	}
	// Events: every one the outbox holds is delivered (none left pending), repeats are counted.
	deadline = time.Now().Add(bound)
	for {
		var st struct {
			Data struct{ Pending int } `json:"data"`
		}
		// An operator's route (admins and automation keys): the test's user is an admin.
		if code := h.call(t, "GET", "/api/webhooks/notification-status", nil, &st); code != 200 {
			t.Fatalf("notification-status: %d", code)
		}
		if st.Data.Pending == 0 {
			break
		}
		if time.Now().After(deadline) {
			c.stuck += st.Data.Pending
			t.Logf("%d events still pending", st.Data.Pending)
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	c.events, c.eventRepeats = h.recv.Take()
	return c
}

// orphans counts live processes (not zombies) whose command line names dataDir: the tools of
// renders and speech the killed host started.
func orphans(dataDir string) int {
	ents, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cl, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(cl, []byte(dataDir)) {
			continue
		}
		st, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(st)
		if f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]); len(f) > 0 && f[0] == "Z" {
			continue
		}
		n++
	}
	return n
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Two hosts share one PostgreSQL with work in flight on both; one is SIGKILLed and stays dead.
// The survivor takes over the dead one's runs, renders, ingests and event deliveries once their
// leases run out: nothing acknowledged is lost, stuck, orphaned or done twice.
func TestTwoHostsOneKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills real host processes")
	}
	url := os.Getenv("TEST_DATABASE_URL")
	if url == "" {
		t.Skip("set TEST_DATABASE_URL: hosts share a database on PostgreSQL only")
	}
	bin := build(t)
	recv := eventsink.New(t)
	email := newEmail()
	dead := newHost(t, bin, url, recv, email)
	survivor := newHost(t, bin, url, recv, email, false)
	wd, ws := dead.load(t, 0), survivor.load(t, 0)
	time.Sleep(time.Duration(2000+rand.IntN(2000)) * time.Millisecond)
	tools := orphans(dead.dataDir)
	dead.kill()
	wd.stop()
	ws.stop()
	time.Sleep(500 * time.Millisecond)
	orphaned := orphans(dead.dataDir)
	wd.merge(ws)
	c := survivor.settle(t, wd)
	c.toolsAtKill, c.orphaned = tools, orphaned
	t.Logf("two hosts, one killed: %s", c)
	if c.bad() {
		t.Errorf("%s: want every count zero", c)
	}
	// The survivor took the dead host's runs over: they ended on it, not by waiting for a restart.
	var runs int
	for _, id := range wd.runIDs {
		var out struct {
			Status string `json:"status"`
		}
		if survivor.call(t, "GET", "/api/workflow/status/"+id, nil, &out) == 200 && out.Status == "completed" {
			runs++
		}
	}
	if runs == 0 {
		t.Errorf("no run completed on the survivor")
	}
}
