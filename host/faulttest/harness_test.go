package faulttest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reelforge/reelforge/internal/eventsink"
	"github.com/reelforge/reelforge/internal/testhost"
	"github.com/reelforge/reelforge/internal/testtool"
)

// dbTimeout is the hosts' DB_TIMEOUT_MS; answerBound how long any answer may take during a fault:
// the deadline, the driver's second to give up on a silent server, and a margin for a loaded
// machine. A host that waits out the fault instead (a 10 s pause) exceeds it.
const (
	dbTimeout   = 2 * time.Second
	answerBound = dbTimeout + 3*time.Second
	// settleBound is how long acknowledged work may take to end after the fault before it counts
	// as stuck.
	settleBound = 3 * time.Minute
	// poll is how often a wait on a host's API asks again.
	poll = 200 * time.Millisecond
)

func TestMain(m *testing.M) { testhost.Main(m) }

// build builds the host once for the package's tests; the engines run in the host.
func build(t *testing.T) testhost.Binaries {
	t.Helper()
	return testhost.Build(t)
}

// host is one host process.
type host struct{ *testhost.Host }

// startHost starts a host on dbURL ("" for SQLite in its DATA_DIR); extra are more environment
// settings (they win). It does not wait for it: see WaitHealth.
func startHost(t *testing.T, name, dbURL string, extra ...string) *host {
	t.Helper()
	env := append([]string{"DATABASE_URL=" + dbURL, "PLUGINS_ENABLED=false",
		"DB_TIMEOUT_MS=" + strconv.Itoa(int(dbTimeout.Milliseconds())), "DB_POOL_MAX=4"}, extra...)
	h := &host{testhost.New(t, testhost.Options{Name: name, Bin: build(t), Env: env})}
	h.Start(t)
	return h
}

// runsIn is how many of the test user's runs are in status, or -1 when h cannot tell.
func (h *host) runsIn(status string) int {
	var out struct {
		Total int `json:"total"`
	}
	if st := h.Call("GET", "/api/workflow/runs?limit=1&status="+status, nil, &out); st != 200 {
		return -1
	}
	return out.Total
}

// login registers (first host) or logs in the test's user, and keeps its token.
func (h *host) login(t *testing.T, email string, register bool) {
	t.Helper()
	var out struct {
		Data struct{ Token string } `json:"data"`
	}
	path, want := "/api/auth/login", 200
	if register {
		path, want = "/api/auth/register", 201
	}
	if st := h.Call("POST", path, map[string]any{"email": email, "password": "fault-test-password", "username": "fault"}, &out); st != want {
		t.Fatalf("%s %s: %d", h.Name, path, st)
	}
	h.Token = out.Data.Token
}

// logLines counts the lines of the host's log so far, but for the access log's (one a request,
// whatever the database does).
func (h *host) logLines() int {
	b, _ := os.ReadFile(h.Log)
	return bytes.Count(b, []byte("\n")) - bytes.Count(b, []byte(" msg=request "))
}

// model is an OpenAI-compatible chat server that records each call: the run it serves (the run's
// tag, which the load puts in each run's topic), a digest of the request, and when it began and
// ended. Each call takes a while (delay, which a scenario may change), so that two executions of
// one run at the same time overlap in its record.
type model struct {
	url   string
	delay atomic.Int64 // a time.Duration
	mu    sync.Mutex
	calls []modelCall
}

// setDelay sets how long the model takes to answer from now on.
func (m *model) setDelay(d time.Duration) { m.delay.Store(int64(d)) }

type modelCall struct {
	tag, digest string
	start, end  time.Time
}

var runTag = regexp.MustCompile(`ftag-[0-9a-f]{16}`)

func newModel(t *testing.T, delay time.Duration) *model {
	m := &model{}
	m.setDelay(delay)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		start := time.Now()
		body, _ := io.ReadAll(req.Body)
		time.Sleep(time.Duration(m.delay.Load())) // the subject: a model takes a while, so executions overlap
		sum := sha256.Sum256(body)
		m.mu.Lock()
		m.calls = append(m.calls, modelCall{tag: runTag.FindString(string(body)), digest: hex.EncodeToString(sum[:8]), start: start, end: time.Now()})
		m.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(req.URL.Path, "/embeddings") {
			http.Error(w, `{"error":{"message":"no embeddings here"}}`, http.StatusNotFound)
			return
		}
		plan := `{"posts":[{"day":1,"title":"Quokka lanterns","hook":"Why do quokkas carry lanterns?"}]}`
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-fault", "object": "chat.completion", "model": "fault",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": plan}}}})
	}))
	t.Cleanup(srv.Close)
	m.url = srv.URL
	return m
}

// executions counts, over the calls for the given run tags: calls made again with the same request
// (duplicated) and calls of one run that ran at the same time (overlapping: two executions), and
// a line for each call made again, to find it in the hosts' logs.
func (m *model) executions(tags map[string]bool) (calls, duplicated, overlapping int, again []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	byTag := map[string][]modelCall{}
	for _, c := range m.calls {
		if tags[c.tag] {
			byTag[c.tag] = append(byTag[c.tag], c)
		}
	}
	for _, cs := range byTag {
		calls += len(cs)
		seen := map[string]bool{}
		sort.Slice(cs, func(i, j int) bool { return cs[i].start.Before(cs[j].start) })
		for i, c := range cs {
			if seen[c.digest] {
				duplicated++
				again = append(again, fmt.Sprintf("%s asked again at %s (calls of the tag: %d, the first at %s)",
					c.tag, c.start.UTC().Format("15:04:05.000"), len(cs), cs[0].start.UTC().Format("15:04:05.000")))
			}
			seen[c.digest] = true
			if i > 0 && c.start.Before(cs[i-1].end) {
				overlapping++
			}
		}
	}
	return calls, duplicated, overlapping, again
}

// answers records what clients saw: each answer's status and time.
type answers struct {
	mu       sync.Mutex
	byStatus map[int]int
	slowest  time.Duration
	late     map[string]int // answers slower than answerBound, by request
	bad      map[string]int
}

func newAnswers() *answers {
	return &answers{byStatus: map[int]int{}, bad: map[string]int{}, late: map[string]int{}}
}

func (a *answers) add(what string, status int, took time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.byStatus[status]++
	a.slowest = max(a.slowest, took)
	if took > answerBound {
		a.late[fmt.Sprintf("%s %d in %s", what, status, took.Round(10*time.Millisecond))]++
	}
	// Success, or the database's state in the contract; anything else (500, no answer) is bad.
	if status != 200 && status != 201 && status != 503 && status != 507 {
		a.bad[fmt.Sprintf("%s %d", what, status)]++
	}
}

func (a *answers) String() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return fmt.Sprintf("statuses %v, slowest %s, late %v, bad %v", a.byStatus, a.slowest.Round(time.Millisecond), a.late, a.bad)
}

// work is what a load sent and the hosts acknowledged.
type work struct {
	mu     sync.Mutex
	runs   map[string]string // run id -> its tag
	tasks  map[string]string // acknowledged task id -> its tag
	docs   map[string]bool   // acknowledged document ids
	stop   func()
	during *answers // answers while a fault lasts (between mark and unmark)
	fault  bool
	// held stops the load starting runs and tasks (ingests go on): the executors' slots free up.
	held atomic.Bool
}

func (w *work) record(what string, st int, took time.Duration) {
	w.mu.Lock()
	during := w.fault
	w.mu.Unlock()
	if during {
		w.during.add(what, st, took)
	}
}

// load starts runs, tasks (in project) and ingests on each host until stopped. A task's changes are
// announced as events (its creation in the transaction that creates it, its end when its run ends),
// which go to the receiver.
func load(hosts []*host, project string) *work {
	w := &work{runs: map[string]string{}, tasks: map[string]string{}, docs: map[string]bool{}, during: newAnswers()}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	w.stop = func() { cancel(); wg.Wait() }
	for _, h := range hosts {
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					if !w.held.Load() {
						w.startRun(h)
					}
					st, took := h.TimedCall("GET", "/api/projects", nil, nil)
					w.record("list projects", st, took)
					if !testhost.Pace(ctx, 100*time.Millisecond) {
						return
					}
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				tag := fmt.Sprintf("ftag-%016x", rand.Uint64())
				var out struct {
					Data struct {
						Task struct{ ID string } `json:"task"`
					} `json:"data"`
				}
				if !w.held.Load() {
					st, took := h.TimedCall("POST", "/api/tasks", map[string]any{"projectId": project, "type": "content_plan_workflow",
						"inputParams": map[string]any{"topic": "quokka lanterns " + tag}}, &out)
					w.record("create task", st, took)
					if st == 201 && out.Data.Task.ID != "" {
						w.mu.Lock()
						w.tasks[out.Data.Task.ID] = tag
						w.mu.Unlock()
					}
				}
				if !testhost.Pace(ctx, 300*time.Millisecond) {
					return
				}
			}
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ctx.Err() == nil; n++ {
				text := strings.Repeat(fmt.Sprintf("Host %d document %d speaks of quokka lanterns at dusk. ", h.Port, n), 50)
				var out struct {
					Data struct {
						Document struct{ ID string } `json:"document"`
					} `json:"data"`
				}
				st, took := h.TimedCall("POST", "/api/knowledge/text", map[string]any{"text": text, "source_name": "fault"}, &out)
				w.record("ingest", st, took)
				if (st == 200 || st == 201) && out.Data.Document.ID != "" {
					w.mu.Lock()
					w.docs[out.Data.Document.ID] = true
					w.mu.Unlock()
				}
				if !testhost.Pace(ctx, 200*time.Millisecond) {
					return
				}
			}
		}()
	}
	return w
}

// startRun starts a run on h, and keeps it when h acknowledges it.
func (w *work) startRun(h *host) {
	tag := fmt.Sprintf("ftag-%016x", rand.Uint64())
	var out struct {
		RunID string `json:"run_id"`
	}
	st, took := h.TimedCall("POST", "/api/workflow/start", map[string]any{"workflow": "content_plan_workflow",
		"inputs": map[string]any{"topic": "quokka lanterns " + tag}}, &out)
	w.record("start run", st, took)
	if (st == 200 || st == 201) && out.RunID != "" {
		w.mu.Lock()
		w.runs[out.RunID] = tag
		w.mu.Unlock()
	}
}

// mark starts (on) or ends the window whose answers count as during the fault.
func (w *work) mark(on bool) {
	w.mu.Lock()
	w.fault = on
	w.mu.Unlock()
}

// outcome is how the acknowledged work ended, once settled.
type outcome struct {
	runs, tasks, docs, events            int
	lost, stuck, lostEvents              int
	failedRuns, failedDocs, eventRepeats int
	calls, duplicated, overlapping       int
}

func (o outcome) String() string {
	return fmt.Sprintf("%d runs, %d tasks, %d documents acknowledged, %d events received: lost %d, stuck %d, events missing %d, "+
		"model calls %d, duplicated %d, overlapping %d (runs and tasks failed %d, documents failed %d, events delivered again %d)",
		o.runs, o.tasks, o.docs, o.events, o.lost, o.stuck, o.lostEvents, o.calls, o.duplicated, o.overlapping,
		o.failedRuns, o.failedDocs, o.eventRepeats)
}

// settle waits, through h, until the acknowledged work of w has ended, and counts how.
func settle(t *testing.T, h *host, w *work, m *model, r *eventsink.Sink) outcome {
	t.Helper()
	var o outcome
	w.mu.Lock()
	runs := map[string]string{}
	for id, tag := range w.runs {
		runs[id] = tag
	}
	docs := map[string]bool{}
	for id := range w.docs {
		docs[id] = true
	}
	tasks := map[string]string{}
	for id, tag := range w.tasks {
		tasks[id] = tag
	}
	w.mu.Unlock()
	o.runs, o.tasks, o.docs = len(runs), len(tasks), len(docs)
	deadline := time.Now().Add(settleBound)
	tags := map[string]bool{}
	ids := make([]string, 0, len(runs))
	for id, tag := range runs {
		ids = append(ids, id)
		tags[tag] = true
	}
	ro := h.SettleRuns(ids, settleBound)
	o.lost += len(ro.Lost)
	o.failedRuns += ro.Failed
	o.stuck += len(ro.Stuck)
	for _, id := range ro.Lost {
		t.Logf("lost run %s", id)
	}
	for _, id := range ro.Stuck {
		t.Logf("stuck run %s", id)
	}
	// Tasks end (success or failed) by the same bound; their runs call the model too.
	ended := map[string]string{} // task id -> its status
	for id, tag := range tasks {
		tags[tag] = true
		var st int
		var s string
		testtool.WithinEvery(time.Until(deadline), poll, func() bool {
			var out struct {
				Data struct {
					Task struct{ Status string } `json:"task"`
				} `json:"data"`
			}
			st = h.Call("GET", "/api/tasks/"+id, nil, &out)
			s = out.Data.Task.Status
			return st == 404 || s == "success" || s == "failed" || s == "cancelled"
		})
		switch {
		case st == 404:
			o.lost++
			t.Logf("lost task %s", id)
		case s == "success" || s == "failed" || s == "cancelled":
			if s != "success" {
				o.failedRuns++
			}
			ended[id] = s
		default:
			o.stuck++
			t.Logf("stuck task %s (%d %s)", id, st, s)
		}
	}
	for id := range docs {
		var st int
		var ps string
		testtool.WithinEvery(time.Until(deadline), poll, func() bool {
			var out struct {
				Data struct {
					Document struct {
						ParseStatus string `json:"parse_status"`
					} `json:"document"`
				} `json:"data"`
			}
			st = h.Call("GET", "/api/knowledge/documents/"+id, nil, &out)
			ps = out.Data.Document.ParseStatus
			return st == 404 || ps == "indexed" || ps == "failed"
		})
		switch {
		case st == 404:
			o.lost++
			t.Logf("lost document %s", id)
		case ps == "failed":
			o.failedDocs++
		case ps != "indexed":
			o.stuck++
			t.Logf("stuck document %s (%d %s)", id, st, ps)
		}
	}
	if n := h.SettleEvents(t, time.Until(deadline)); n > 0 {
		o.stuck += n
		t.Logf("%d events still pending", n)
	}
	// Every acknowledged task was announced to the receiver: its creation (job.status.changed,
	// committed with the task) and, once it ended, its end (task.completed or job.failed).
	created, finished := map[string]bool{}, map[string]bool{}
	for _, e := range r.Events() {
		id, _ := e.Data["taskId"].(string)
		switch {
		case e.Name == "job.status.changed" && e.Data["status"] == "pending":
			created[id] = true
		case e.Name == "task.completed" || e.Name == "job.failed":
			finished[id] = true
		}
	}
	for id := range tasks {
		if !created[id] {
			o.lostEvents++
			t.Logf("task %s: its creation was not announced", id)
		}
		if _, ok := ended[id]; ok && !finished[id] {
			o.lostEvents++
			t.Logf("task %s (%s): its end was not announced", id, ended[id])
		}
	}
	o.events, o.eventRepeats = r.Take()
	var again []string
	o.calls, o.duplicated, o.overlapping, again = m.executions(tags)
	for _, a := range again {
		kind := "run"
		for _, tag := range tasks {
			if strings.HasPrefix(a, tag+" ") {
				kind = "task (retried after its run failed?)"
			}
		}
		t.Logf("model call made again, %s: %s", kind, a)
	}
	return o
}

// lastLines is the tail of a host's log, for a failure message.
func lastLines(h *host, n int) string {
	f, err := os.Open(h.Log)
	if err != nil {
		return ""
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
