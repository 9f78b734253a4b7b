package runs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/kb/llm"
	"github.com/reelforge/reelforge/host/manifest"
	"github.com/reelforge/reelforge/host/runs"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/pgstore"
	"github.com/reelforge/reelforge/internal/pgcluster"
	"github.com/reelforge/reelforge/internal/testtool"
	"github.com/reelforge/reelforge/sdk/engine"
)

// modelCall is one call the test's model server answered: which host made it, for which run (the
// run's topic is in the prompt), and when it arrived.
type modelCall struct {
	host, run string
	at        time.Time
}

// recordingModel is an OpenAI-compatible chat server that answers after a pause and records each
// call with its host (the path's first segment) and its run.
type recordingModel struct {
	mu    sync.Mutex
	calls []modelCall
	delay time.Duration
}

var topicRe = regexp.MustCompile(`fence-[0-9a-f]{8}`)

func (m *recordingModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct{ Content string } `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	run := ""
	for _, msg := range req.Messages {
		if t := topicRe.FindString(msg.Content); t != "" {
			run = t
		}
	}
	host := regexp.MustCompile(`^/([^/]+)/`).FindStringSubmatch(r.URL.Path)
	m.mu.Lock()
	m.calls = append(m.calls, modelCall{host: host[1], run: run, at: time.Now()})
	m.mu.Unlock()
	select {
	case <-time.After(m.delay):
	case <-r.Context().Done():
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"choices":[{"message":{"role":"assistant","content":"Script about %s: a line of the model."}}]}`, run)
}

// overlaps lists the runs whose model calls came from two hosts interleaved: one host called for
// the run after another host had started calling for it and then called again. A run taken over
// once its first executor stopped has the calls of one host, then those of the other.
func (m *recordingModel) overlaps() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	byRun := map[string][]modelCall{}
	for _, c := range m.calls {
		byRun[c.run] = append(byRun[c.run], c)
	}
	var out []string
	for run, calls := range byRun {
		sort.Slice(calls, func(i, j int) bool { return calls[i].at.Before(calls[j].at) })
		seen := map[string]bool{}
		prev := ""
		for _, c := range calls {
			if c.host != prev && seen[c.host] {
				out = append(out, fmt.Sprintf("%s (%d calls)", run, len(calls)))
				break
			}
			seen[c.host], prev = true, c.host
		}
	}
	return out
}

// TestPausedPostgresRunsOnce: two hosts execute runs on a PostgreSQL cluster of the test's own,
// which is paused for longer than a lease while runs are under way (issue 38: a claim that landed
// expired let two executors run the same run at once, both calling the model for every step). No
// run is executed by two hosts at once, as the model's calls show, and every run completes once
// the database is back.
func TestPausedPostgresRunsOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the paused-PostgreSQL test (it starts a cluster of its own)")
	}
	ctx := context.Background()
	cl := pgcluster.Start(t, pgcluster.Options{})
	url := cl.CreateDB(t, "fence")
	model := &recordingModel{delay: 150 * time.Millisecond}
	srv := httptest.NewServer(model)
	defer srv.Close()

	wf := &manifest.Manifest{ID: "fence", Name: "fence", Version: "1", Engine: "node", Timeout: 5 * time.Minute,
		Steps: []engine.Step{
			{ID: "w1", Name: "w1", Agent: "script_writer", With: json.RawMessage(`{"format":"voiceover"}`)},
			{ID: "w2", Name: "w2", Agent: "script_writer", With: json.RawMessage(`{"format":"voiceover"}`), DependsOn: []string{"w1"}},
			{ID: "w3", Name: "w3", Agent: "script_writer", With: json.RawMessage(`{"format":"voiceover"}`), DependsOn: []string{"w2"}},
			{ID: "w4", Name: "w4", Agent: "script_writer", With: json.RawMessage(`{"format":"voiceover"}`), DependsOn: []string{"w3"}},
		}}
	reg := testRegistry(t, wf)
	const lease = 3 * time.Second
	var stores []store.Driver
	var services []*runs.Service
	for _, host := range []string{"a", "b"} {
		st, err := pgstore.Open(ctx, url, pgstore.Options{Timeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		stores = append(stores, st)
		chat := runs.ChatLLM{Client: llm.NewClient(llm.ClientConfig{BaseURL: srv.URL + "/" + host, Retries: -1, Timeout: 10 * time.Second}), Model: "m"}
		log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})).With("host", host)
		s := newService(t, runs.Deps{Store: st, Manifests: reg, LLM: chat, Log: log}, runs.Options{HostID: host, Lease: lease, Workers: 4})
		services = append(services, s)
	}
	p := newUser(t, stores[0])
	var ids []string
	for range 12 {
		topic := "fence-" + uuid.NewString()[:8]
		r := &store.Run{ID: uuid.NewString(), WorkflowID: "fence", UserID: p.UserID, Inputs: json.RawMessage(`{"topic":"` + topic + `"}`),
			UserContext: json.RawMessage(`{"user_id":"` + p.UserID + `"}`)}
		if err := stores[0].CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	for _, s := range services {
		s.StartExecutor(ctx)
		defer s.StopExecutor()
	}
	// Pause once runs are under way on both hosts, for two leases.
	testtool.Eventually(t, 30*time.Second, "6 model calls", func() bool {
		model.mu.Lock()
		defer model.mu.Unlock()
		return len(model.calls) >= 6
	})
	cl.Pause(t)
	time.Sleep(2 * lease) // the subject: the leases run out by the clock while the database sleeps
	cl.Resume(t)

	for _, id := range ids {
		got := waitStatusWithin(t, stores[0], id, 2*time.Minute, store.RunCompleted, store.RunFailed)
		if got.Status != store.RunCompleted {
			t.Errorf("run %s = %s %s, want completed", id, got.Status, got.Error)
		}
	}
	if o := model.overlaps(); len(o) > 0 {
		t.Errorf("runs executed by two hosts at once: %v", o)
	}
	model.mu.Lock()
	t.Logf("%d model calls for %d runs", len(model.calls), len(ids))
	model.mu.Unlock()
}
