package runs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/kb/llm"
	"github.com/reelforge/reelforge/host/manifest"
	"github.com/reelforge/reelforge/host/runs"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/sdk/engine"
)

// refusingStore refuses, while refuse is set, to record what a run came to: its completed steps
// and its completion (a database that failed as the outcomes came). The first refused completion
// ends the refusal, as the database coming back would.
type refusingStore struct {
	store.Driver
	refuse  atomic.Bool
	refused atomic.Int32
}

var errRefused = errors.New("the database is unreachable (the test's)")

func (s *refusingStore) UpsertTraceStep(ctx context.Context, ts *store.TraceStep) error {
	if s.refuse.Load() && ts.Status == engine.StepCompleted {
		s.refused.Add(1)
		return errRefused
	}
	return s.Driver.UpsertTraceStep(ctx, ts)
}

func (s *refusingStore) UpdateRun(ctx context.Context, id string, u store.RunUpdate) (*store.Run, error) {
	if u.Status == store.RunCompleted && s.refuse.CompareAndSwap(true, false) {
		s.refused.Add(1)
		return nil, errRefused
	}
	return s.Driver.UpdateRun(ctx, id, u)
}

// TestRefusedOutcomeAsksModelOnce: a run whose steps' outcomes and completion the database refused
// is executed again once its lease runs out (a recovery), and its steps, executed again, read the
// model's answers back instead of calling the model again (issue 38): one call a step in all.
func TestRefusedOutcomeAsksModelOnce(t *testing.T) {
	t.Parallel()
	for name, open := range databases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			calls := map[string]int{} // by prompt
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var req struct {
					Messages []struct{ Content string } `json:"messages"`
				}
				_ = json.NewDecoder(r.Body).Decode(&req)
				mu.Lock()
				calls[req.Messages[len(req.Messages)-1].Content]++
				n := len(calls)
				mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"choices":[{"message":{"role":"assistant","content":"Answer %d of the model."}}]}`, n)
			}))
			defer srv.Close()
			st := &refusingStore{Driver: open(t)}
			st.refuse.Store(true)
			wf := &manifest.Manifest{ID: "answers", Name: "answers", Version: "1", Engine: "node", Timeout: time.Minute,
				Steps: []engine.Step{
					{ID: "w1", Name: "w1", Agent: "script_writer", With: json.RawMessage(`{"format":"voiceover"}`)},
					{ID: "w2", Name: "w2", Agent: "script_writer", With: json.RawMessage(`{"format":"plan"}`), DependsOn: []string{"w1"}},
				}}
			chat := runs.ChatLLM{Client: llm.NewClient(llm.ClientConfig{BaseURL: srv.URL, Retries: -1, Timeout: 10 * time.Second}), Model: "m"}
			s := newService(t, runs.Deps{Store: st, Manifests: testRegistry(t, wf), LLM: chat}, runs.Options{HostID: "h", Lease: time.Second})
			p := newUser(t, st)
			r := &store.Run{ID: uuid.NewString(), WorkflowID: "answers", UserID: p.UserID, Inputs: json.RawMessage(`{"topic":"refused outcomes"}`),
				UserContext: json.RawMessage(`{"user_id":"` + p.UserID + `"}`)}
			if err := st.CreateRun(context.Background(), r); err != nil {
				t.Fatal(err)
			}
			s.StartExecutor(context.Background())
			defer s.StopExecutor()
			got := waitStatusWithin(t, st, r.ID, time.Minute, store.RunCompleted, store.RunFailed)
			if got.Status != store.RunCompleted || got.Recoveries == 0 || st.refused.Load() < 3 {
				t.Fatalf("run %s after %d recoveries, %d outcomes refused; want completed after a recovery, with 3 refused",
					got.Status, got.Recoveries, st.refused.Load())
			}
			mu.Lock()
			defer mu.Unlock()
			if len(calls) != 2 {
				t.Errorf("the model got %d distinct prompts, want 2 (one a step): %v", len(calls), calls)
			}
			for prompt, n := range calls {
				if n != 1 {
					t.Errorf("the model was asked %d times: %.80q", n, prompt)
				}
			}
		})
	}
}

// cutOff refuses, once cut, the renewals of run leases and the claims of runs, as a database a
// host cannot reach would: the executor's claim is lost while the host lives on (the model's answer
// is recorded all the same, as once the host reaches the database again).
type cutOff struct {
	store.Driver
	cut atomic.Bool
}

func (s *cutOff) RenewLease(ctx context.Context, p store.RunLeaseParams) error {
	if s.cut.Load() {
		return errRefused
	}
	return s.Driver.RenewLease(ctx, p)
}

func (s *cutOff) ClaimRun(ctx context.Context, owner string, lease time.Duration) (*store.Run, error) {
	if s.cut.Load() {
		return nil, errRefused
	}
	return s.Driver.ClaimRun(ctx, owner, lease)
}

// heldCalls notes when a model call it was asked to begin was held by another claim.
type heldCalls struct {
	store.Driver
	once sync.Once
	held chan struct{}
}

func (s *heldCalls) BeginModelCall(ctx context.Context, c store.ModelCall, lease time.Duration) (store.ModelCallState, error) {
	st, err := s.Driver.BeginModelCall(ctx, c, lease)
	if err == nil && st.HeldBy != "" {
		s.once.Do(func() { close(s.held) })
	}
	return st, err
}

// TestTakeoverWaitsForAnswerInProgress: host a is cut off from the database (its renewals and
// claims fail) while the model answers its first step, so its claim runs out and host b takes the
// run over while a's model call is still in progress. b finds the call held by a's claim and waits
// for its answer instead of asking again; a, its claim lost, lets the call finish and records the
// answer: the model is asked once a step (issue 38).
func TestTakeoverWaitsForAnswerInProgress(t *testing.T) {
	t.Parallel()
	for name, open := range databases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := open(t)
			a := &cutOff{Driver: st}
			b := &heldCalls{Driver: st, held: make(chan struct{})}
			asked := make(chan struct{}) // the model got its first call
			var askedOnce sync.Once
			var mu sync.Mutex
			calls := map[string]int{} // by prompt
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var req struct {
					Messages []struct{ Content string } `json:"messages"`
				}
				_ = json.NewDecoder(r.Body).Decode(&req)
				mu.Lock()
				calls[req.Messages[len(req.Messages)-1].Content]++
				n := len(calls)
				mu.Unlock()
				if n == 1 {
					// The first step's answer comes once b waits for it (or, failing that, later
					// than a's call may last, and the test fails on the count).
					a.cut.Store(true)
					askedOnce.Do(func() { close(asked) })
					select {
					case <-b.held:
					case <-time.After(20 * time.Second):
					}
				}
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"choices":[{"message":{"role":"assistant","content":"Answer %d of the model."}}]}`, n)
			}))
			defer srv.Close()
			wf := &manifest.Manifest{ID: "inprogress", Name: "inprogress", Version: "1", Engine: "node", Timeout: time.Minute,
				Steps: []engine.Step{
					{ID: "w1", Name: "w1", Agent: "script_writer", With: json.RawMessage(`{"format":"voiceover"}`)},
					{ID: "w2", Name: "w2", Agent: "script_writer", With: json.RawMessage(`{"format":"plan"}`), DependsOn: []string{"w1"}},
				}}
			chat := runs.ChatLLM{Client: llm.NewClient(llm.ClientConfig{BaseURL: srv.URL, Retries: -1, Timeout: 30 * time.Second}), Model: "m"}
			const lease = 3 * time.Second
			as := newService(t, runs.Deps{Store: a, Manifests: testRegistry(t, wf), LLM: chat}, runs.Options{HostID: "a", Lease: lease})
			bs := newService(t, runs.Deps{Store: b, Manifests: testRegistry(t, wf), LLM: chat}, runs.Options{HostID: "b", Lease: lease})
			p := newUser(t, st)
			r := &store.Run{ID: uuid.NewString(), WorkflowID: "inprogress", UserID: p.UserID, Inputs: json.RawMessage(`{"topic":"answers in progress"}`),
				UserContext: json.RawMessage(`{"user_id":"` + p.UserID + `"}`)}
			if err := st.CreateRun(context.Background(), r); err != nil {
				t.Fatal(err)
			}
			as.StartExecutor(context.Background())
			defer as.StopExecutor()
			select {
			case <-asked:
			case <-time.After(time.Minute):
				t.Fatal("host a never asked the model")
			}
			bs.StartExecutor(context.Background())
			defer bs.StopExecutor()
			got := waitStatusWithin(t, st, r.ID, time.Minute, store.RunCompleted, store.RunFailed)
			if got.Status != store.RunCompleted || got.Recoveries == 0 {
				t.Fatalf("run %s after %d recoveries; want completed by host b after a takeover", got.Status, got.Recoveries)
			}
			select {
			case <-b.held:
			default:
				t.Errorf("host b never found host a's call in progress")
			}
			mu.Lock()
			defer mu.Unlock()
			if len(calls) != 2 {
				t.Errorf("the model got %d distinct prompts, want 2 (one a step): %v", len(calls), calls)
			}
			for prompt, n := range calls {
				if n != 1 {
					t.Errorf("the model was asked %d times: %.80q", n, prompt)
				}
			}
		})
	}
}
