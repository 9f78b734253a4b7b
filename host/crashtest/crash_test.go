package crashtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reelforge/reelforge/internal/eventsink"
	"github.com/reelforge/reelforge/internal/testhost"
	"github.com/reelforge/reelforge/internal/testtool"
)

// bound is how long recovered work may take after the restart before it counts as stuck: far
// more than the renders take, far less than any time-out (videogen's is 10 minutes).
const bound = 3 * time.Minute

// poll is how often a wait on the host's API asks again.
const poll = 200 * time.Millisecond

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

func TestMain(m *testing.M) { testhost.Main(m) }

// build builds the host and the generators plugin, which does the renders and speech; the other
// engines run in the host (their binaries are not in PLUGIN_DIR).
func build(t *testing.T) testhost.Binaries {
	t.Helper()
	return testhost.Build(t, "generators")
}

// host is one DATA_DIR and database, started and killed round after round.
type host struct {
	*testhost.Host
	recv *eventsink.Sink
}

// newEmail is a user of its own for each test: a database may hold earlier tests' users.
func newEmail() string { return fmt.Sprintf("crash-%x@example.com", rand.Uint64()) }

// newHost starts a host on dbURL with a DATA_DIR of its own, as the user email; it creates that
// user first unless create is false (a second host on the same database finds it there).
func newHost(t *testing.T, bin testhost.Binaries, dbURL string, recv *eventsink.Sink, email string, create ...bool) *host {
	t.Helper()
	return newHostIn(t, hostParams{bin: bin, dbURL: dbURL, recv: recv, email: email, create: len(create) == 0 || create[0]})
}

// hostParams are a crash test's host: its binaries, database ("" for SQLite), DATA_DIR ("" for a
// temporary one), event receiver, and user (created first when create is set).
type hostParams struct {
	bin            testhost.Binaries
	dbURL, dataDir string
	recv           *eventsink.Sink
	email          string
	create         bool
}

// newHostIn is newHost with the DATA_DIR p.dataDir.
func newHostIn(t *testing.T, p hostParams) *host {
	t.Helper()
	h := &host{recv: p.recv, Host: testhost.New(t, testhost.Options{Bin: p.bin, DataDir: p.dataDir,
		Env: []string{"DATABASE_URL=" + p.dbURL, "PLUGINS_ENABLED=true", "RATE_LIMIT_PER_MINUTE=100000",
			"AUTOMATION_ENABLE_NOTIFICATIONS=true", "AUTOMATION_EVENT_WEBHOOK_URL=" + p.recv.URL,
			"AUTOMATION_WEBHOOK_SECRET=crash", "AUTOMATION_BATCH_INTERVAL=200"}})}
	if p.create {
		h.Command(t, "user", "create", "--email", p.email, "--password", "crash-test-password", "--role", "admin")
	}
	h.start(t)
	var login struct {
		Data struct{ Token string } `json:"data"`
	}
	if st := h.Call("POST", "/api/auth/login", map[string]any{"email": p.email, "password": "crash-test-password"}, &login); st != 200 {
		t.Fatalf("login: %d", st)
	}
	h.Token = login.Data.Token
	return h
}

// start starts the host and waits until it answers.
func (h *host) start(t *testing.T) {
	t.Helper()
	h.Start(t)
	h.WaitHealth(t, 200, time.Minute)
}

// round starts work, kills the host at a random moment, starts it again and counts the outcome.
func (h *host) round(t *testing.T, i int) counts {
	t.Helper()
	w := h.load(t, i)
	// The test's subject: a kill at a random moment of the work, not at a state it waits for.
	time.Sleep(time.Duration(1500+rand.IntN(3000)) * time.Millisecond)
	tools := orphans(h.DataDir)
	h.Kill()
	w.stop()
	orphaned := orphansLeft(h.DataDir)
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
				if st := h.Call("POST", "/api/workflow/start", map[string]any{"workflow": wf,
					"inputs": map[string]any{"topic": fmt.Sprintf("tea %d-%d-%d-%d", h.Port, i, k, n)}}, &out); st == 201 || st == 200 {
					w.mu.Lock()
					w.runIDs = append(w.runIDs, out.RunID)
					w.mu.Unlock()
				}
				if !testhost.Pace(ctx, 50*time.Millisecond) {
					return
				}
			}
		}()
	}
	// Ingests: texts large enough to be caught mid-ingest now and then.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 0; ctx.Err() == nil; n++ {
			text := strings.Repeat(fmt.Sprintf("Host %d round %d document %d speaks of quokka lanterns at dusk. ", h.Port, i, n), 400)
			sum := sha256.Sum256([]byte(text))
			var out struct {
				Data struct {
					Document struct{ ID string } `json:"document"`
				} `json:"data"`
			}
			if st := h.Call("POST", "/api/knowledge/text", map[string]any{"text": text, "source_name": "crash"}, &out); st == 201 || st == 200 {
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
	ro := h.SettleRuns(runIDs, bound)
	c.lost += len(ro.Lost)
	c.failedRuns += ro.Failed
	c.stuck += len(ro.Stuck)
	for _, id := range ro.Stuck {
		t.Logf("stuck run %s", id)
	}
	// Every acknowledged document ends, indexed or failed, once per hash. A document whose
	// failure could not be written (a full disk) is recorded by the host's back-off once the
	// database takes writes again, up to its cap after the runs have settled: wait for it.
	var docsNow []listedDocument
	testtool.WithinEvery(bound, time.Second, func() bool {
		docsNow = h.documents()
		for _, d := range docsNow {
			if d.ParseStatus == "parsing" || d.ParseStatus == "uploading" {
				return false
			}
		}
		return true
	})
	seen := map[string]int{}
	byID := map[string]string{}
	for _, d := range docsNow {
		seen[d.FileHash]++
		byID[d.ID] = d.ParseStatus
		if d.ParseStatus == "parsing" || d.ParseStatus == "uploading" {
			c.stuck++
			t.Logf("stuck document %s (%s)", d.ID, d.ParseStatus)
		}
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
	// The test's user is an admin, who may read the outbox's state.
	if n := h.SettleEvents(t, bound); n > 0 {
		c.stuck += n
		t.Logf("%d events still pending", n)
	}
	c.events, c.eventRepeats = h.recv.Take()
	return c
}

// orphansLeft is orphans once the kernel's parent-death signals had time to reach the killed
// host's children: it waits (two seconds at most) for them to be gone.
func orphansLeft(dataDir string) int {
	testtool.Within(2*time.Second, func() bool { return orphans(dataDir) == 0 })
	return orphans(dataDir)
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
	// The test's subject: a kill at a random moment of the work, not at a state it waits for.
	time.Sleep(time.Duration(2000+rand.IntN(2000)) * time.Millisecond)
	tools := orphans(dead.DataDir)
	dead.Kill()
	wd.stop()
	ws.stop()
	orphaned := orphansLeft(dead.DataDir)
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
		if survivor.Call("GET", "/api/workflow/status/"+id, nil, &out) == 200 && out.Status == "completed" {
			runs++
		}
	}
	if runs == 0 {
		t.Errorf("no run completed on the survivor")
	}
}

// listedDocument is a document as GET /api/knowledge/documents lists it.
type listedDocument struct {
	ID          string `json:"id"`
	FileHash    string `json:"file_hash"`
	ParseStatus string `json:"parse_status"`
}

// documents lists every knowledge document of h's user, page by page.
func (h *host) documents() []listedDocument {
	var all []listedDocument
	for page := 1; ; page++ {
		var list struct {
			Data struct {
				Documents []listedDocument `json:"documents"`
			} `json:"data"`
		}
		h.Call("GET", fmt.Sprintf("/api/knowledge/documents?limit=100&page=%d", page), nil, &list)
		if len(list.Data.Documents) == 0 {
			return all
		}
		all = append(all, list.Data.Documents...)
	}
}
