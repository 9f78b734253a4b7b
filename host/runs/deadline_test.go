package runs_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reelforge/reelforge/host/manifest"
	"github.com/reelforge/reelforge/host/runs"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/internal/outbound"
	"github.com/reelforge/reelforge/plugins/graph"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// fakeClock is a store clock the test moves by hand, so that a job's deadline is passed or not
// by the test's word, not by how fast the machine is. It starts an hour back: PostgreSQL keeps run
// leases by its own clock (sqldb leaseClock), and a run handed back at a time of this clock must be
// claimable there too.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Now().Add(-time.Hour).UTC().Truncate(time.Millisecond).UnixNano())
	return c
}

func (c *fakeClock) Now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *fakeClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// clockedStores open each database with clock.
var clockedStores = map[string]func(t *testing.T, clock func() time.Time) store.Driver{
	"sqlite":   openSQLite,
	"postgres": openPostgresClock,
}

// recordingRunner is an agent graph runner speaking the project's protocol: it records each
// request (path and body) in order and accepts everything.
type recordingRunner struct {
	mu   sync.Mutex
	reqs []posted
	got  chan struct{}
}

type posted struct {
	Path string
	Body map[string]any
}

func (r *recordingRunner) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	raw, _ := io.ReadAll(req.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	r.mu.Lock()
	r.reqs = append(r.reqs, posted{Path: req.URL.Path, Body: body})
	r.mu.Unlock()
	select {
	case r.got <- struct{}{}:
	default:
	}
	w.WriteHeader(http.StatusAccepted)
	_, _ = w.Write([]byte(`{"accepted":true}`))
}

func (r *recordingRunner) posts() []posted {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]posted(nil), r.reqs...)
}

// waitPosts waits until the runner got n requests.
func (r *recordingRunner) waitPosts(t *testing.T, n int) []posted {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		if p := r.posts(); len(p) >= n {
			return p
		}
		select {
		case <-r.got:
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			t.Fatalf("the runner got %d requests, want %d: %+v", len(r.posts()), n, r.posts())
		}
	}
}

// A graph that keeps calling back `running` is never timed out, however long it runs; one silent for
// longer than its job's timeout is told to stop (POST /cancel with its job) before the next attempt is
// posted, with attempt 2, and every later callback of the old job answers 410.
func TestRunningCallbacksRenewTheJobDeadline(t *testing.T) {
	t.Parallel()
	for name, open := range clockedStores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			clock := newFakeClock()
			st := open(t, clock.Now)
			runner := &recordingRunner{got: make(chan struct{}, 1)}
			srv := httptest.NewServer(runner)
			t.Cleanup(srv.Close)
			eng := graph.New(graph.Options{Tool: outbound.Tool{URL: srv.URL}, CallbackBaseURL: "http://host.test"})
			const timeout = time.Minute
			s := newService(t, runs.Deps{Store: st, Manifests: testRegistry(t, graphManifest()), Plugins: fakePlugins{eng}},
				// The run's lease outlives the clock's jumps: only the job's deadline is under test.
				runs.Options{Lease: time.Hour, Policies: map[string]manifest.JobPolicy{
					engine.JobGraph: {MaxRetries: 1, Timeout: timeout, Backoff: time.Millisecond}}})
			s.StartExecutor(ctx)
			defer s.StopExecutor()
			r, err := s.Start(ctx, runs.StartParams{Workflow: "g", User: newUser(t, st)})
			if err != nil {
				t.Fatal(err)
			}
			first := runner.waitPosts(t, 1)[0]
			if first.Path != "/run" || first.Body["attempt"] != float64(1) {
				t.Fatalf("first post = %s %v, want /run with attempt 1", first.Path, first.Body)
			}
			job1, _ := first.Body["job_id"].(string)
			running := func(jobID string) error {
				_, err := s.Callback(ctx, engine.CallbackGraph, []byte(`{"run_id":"`+r.ID+`","job_id":"`+jobID+
					`","status":"running","trace":[{"step_id":"research","status":"running"}],"metadata":{"progress":30}}`))
				return err
			}

			// Three minutes of work, a progress callback every 50 s: never silent for a minute.
			for range 4 {
				clock.Advance(50 * time.Second)
				if err := running(job1); err != nil {
					t.Fatalf("running callback: %v", err)
				}
				s.Sweep(ctx)
			}
			if j, _ := st.GetJob(ctx, job1); j.Status == engine.JobTimeout || len(runner.posts()) != 1 {
				t.Fatalf("after 200 s of progress callbacks: job %s, runner got %+v; want the job open and one post", j.Status, runner.posts())
			}

			// Silent for longer than the timeout: timed out, cancelled at the runner, posted again.
			clock.Advance(timeout + time.Second)
			s.Sweep(ctx)
			if j, _ := st.GetJob(ctx, job1); j.Status != engine.JobTimeout {
				t.Fatalf("job after a silence past its timeout = %s, want timeout", j.Status)
			}
			clock.Advance(time.Second) // past the back-off: the run is handed to the executor again
			posts := runner.waitPosts(t, 3)
			if posts[1].Path != "/cancel" || !sameIDs(posts[1].Body["job_ids"], job1) {
				t.Errorf("second post = %s %v, want /cancel of job %s before the next attempt", posts[1].Path, posts[1].Body, job1)
			}
			if posts[2].Path != "/run" || posts[2].Body["attempt"] != float64(2) || posts[2].Body["job_id"] == job1 {
				t.Errorf("third post = %s %v, want /run of a new job with attempt 2", posts[2].Path, posts[2].Body)
			}

			// The old job's callbacks, progress or final, are told it is gone.
			for _, status := range []string{"running", "completed"} {
				_, err := s.Callback(ctx, engine.CallbackGraph, []byte(`{"run_id":"`+r.ID+`","job_id":"`+job1+`","status":"`+status+`","outputs":{}}`))
				e := errcode.As(err)
				if e == nil || e.Code != errcode.WorkflowTimeout || e.HTTPStatus() != http.StatusGone {
					t.Errorf("%s callback of the timed-out job = %v, want 410 WORKFLOW_TIMEOUT", status, err)
				}
			}
			// The new job completes the run.
			job2, _ := posts[2].Body["job_id"].(string)
			if _, err := s.Callback(ctx, engine.CallbackGraph, []byte(`{"run_id":"`+r.ID+`","job_id":"`+job2+
				`","status":"completed","outputs":{"script":"done"},"trace":[]}`)); err != nil {
				t.Fatalf("completed callback of the new job: %v", err)
			}
			if got := waitStatus(t, st, r.ID, store.RunCompleted, store.RunFailed); got.Status != store.RunCompleted {
				t.Errorf("run = %s %s, want completed", got.Status, got.Error)
			}
		})
	}
}

func sameIDs(v any, want ...string) bool {
	l, _ := v.([]any)
	if len(l) != len(want) {
		return false
	}
	for i := range l {
		if l[i] != want[i] {
			return false
		}
	}
	return true
}
