package graph_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reelforge/reelforge/internal/outbound"
	"github.com/reelforge/reelforge/plugins/graph"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/enginetest"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// fakeRunner records what the engine posts and answers with status.
type fakeRunner struct {
	status int
	mu     sync.Mutex
	posts  []posted
}

type posted struct {
	Path string
	Body map[string]any
}

func (f *fakeRunner) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	f.mu.Lock()
	f.posts = append(f.posts, posted{Path: r.URL.Path, Body: body})
	f.mu.Unlock()
	w.WriteHeader(f.status)
	_, _ = w.Write([]byte(`{"accepted": true}`))
}

func (f *fakeRunner) got() []posted {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]posted(nil), f.posts...)
}

func startRunner(t *testing.T, status int) (*fakeRunner, string) {
	t.Helper()
	f := &fakeRunner{status: status}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

// downURL is the address of a server that was closed: nothing listens there.
func downURL(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	return srv.URL
}

func request() *engine.RunRequest {
	return &engine.RunRequest{
		RunID:       "run-1",
		Workflow:    engine.Workflow{ID: "live", Engine: "graph", Settings: json.RawMessage(`{"graph_id":"live_script"}`)},
		Inputs:      map[string]any{"topic": "coffee"},
		User:        engine.UserContext{UserID: "u-1", Username: "ada"},
		Project:     engine.ProjectContext{ProjectID: "p-1"},
		Attempt:     1,
		CallbackURL: "http://host.test",
		Credential:  "rft_test-credential",
	}
}

func TestConformance(t *testing.T) {
	_, url := startRunner(t, http.StatusAccepted)
	enginetest.Conformance(t, func() engine.Engine { return graph.New(graph.Options{Tool: outbound.Tool{URL: url}}) })
}

func TestRunPostsToRunner(t *testing.T) {
	t.Parallel()
	runner, url := startRunner(t, http.StatusAccepted)
	eng, host := enginetest.New(t, graph.New(graph.Options{Tool: outbound.Tool{URL: url + "/"}}))
	res, err := eng.Run(t.Context(), nil, request())
	if err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	if res.Status != engine.StatusWaiting {
		t.Fatalf("Run() status = %s, want waiting", res.Status)
	}
	jobs := host.Jobs()
	if len(jobs) != 1 || jobs[0].Type != engine.JobGraph {
		t.Fatalf("jobs = %+v, want one graph job", jobs)
	}
	posts := runner.got()
	if len(posts) != 1 {
		t.Fatalf("runner got %d posts, want 1", len(posts))
	}
	want := map[string]any{
		"run_id": "run-1", "job_id": jobs[0].JobID, "workflow_id": "live", "graph_id": "live_script",
		"inputs": map[string]any{"topic": "coffee"}, "callback_url": "http://host.test/api/webhooks/graph-callback",
		"user_context": map[string]any{"user_id": "u-1", "username": "ada"}, "project_context": map[string]any{"project_id": "p-1"},
		"attempt": float64(1), "reelforge_url": "http://host.test", "reelforge_token": "rft_test-credential",
	}
	if diff := cmp.Diff(want, posts[0].Body); diff != "" || posts[0].Path != "/run" {
		t.Errorf("POST %s body mismatch (-want +got):\n%s", posts[0].Path, diff)
	}
	// The credential is a secret: the job's stored request does not hold it.
	if strings.Contains(string(jobs[0].Request), "rft_") {
		t.Errorf("the job's request holds the credential: %s", jobs[0].Request)
	}
	steps := host.Steps()
	if len(steps) != 1 || steps[0].StepID != graph.SummaryStepID || steps[0].Status != engine.StepRunning {
		t.Errorf("steps = %+v, want the running summary step", steps)
	}
}

func TestRunResumeMergesInput(t *testing.T) {
	t.Parallel()
	runner, url := startRunner(t, http.StatusOK)
	eng, _ := enginetest.New(t, graph.New(graph.Options{Tool: outbound.Tool{URL: url}}))
	req := request()
	req.ResumeInput = map[string]any{"approved": true, "topic": "tea"}
	if _, err := eng.Run(t.Context(), nil, req); err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	body := runner.got()[0].Body
	want := map[string]any{"approved": true, "topic": "tea"}
	if diff := cmp.Diff(want, body["inputs"]); diff != "" {
		t.Errorf("resumed inputs mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"approved": true, "topic": "tea"}, body["resume_input"]); diff != "" {
		t.Errorf("resume_input mismatch (-want +got):\n%s", diff)
	}
}

func TestRunRunnerFailures(t *testing.T) {
	t.Parallel()
	_, url500 := startRunner(t, http.StatusInternalServerError)
	tests := map[string]string{
		"answers 500":    url500,
		"down":           downURL(t),
		"not configured": "",
	}
	for name, url := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			eng, _ := enginetest.New(t, graph.New(graph.Options{Tool: outbound.Tool{URL: url}}))
			_, err := eng.Run(t.Context(), nil, request())
			if got := errcode.Of(err); got != errcode.GraphRunner {
				t.Errorf("Run() error = %v (%s), want GRAPH_RUNNER_ERROR", err, got)
			}
		})
	}
}

const trace = `[
 {"step_id":"research","step_name":"Research","agent":"researcher","status":"completed","inputs":{"topic":"coffee"},
  "outputs":{"notes":"n"},"started_at":"2026-11-21T10:00:00.5+00:00","completed_at":"2026-11-21T10:00:01.5+00:00",
  "duration_ms":1000,"confidence":0.9,"tokens_used":12,"cost_usd":0.0001},
 %s]`

func callback(status, last, extra string) json.RawMessage {
	return json.RawMessage(`{"run_id":"run-1","job_id":"job-1","status":"` + status + `","trace":` +
		fmt.Sprintf(trace, last) + `,"metadata":{"total_tokens":24,"total_cost_usd":0.0002,"duration_ms":2000}` + extra + `}`)
}

func TestCallback(t *testing.T) {
	t.Parallel()
	write := `{"step_id":"write","step_name":"Write","agent":"writer","status":"completed","inputs":{},"outputs":{"script":"s"},
	  "started_at":"2026-11-21T10:00:01.5","completed_at":"2026-11-21T10:00:02Z","tokens_used":12,"cost_usd":0.0001}`
	failedWrite := `{"step_id":"write","agent":"writer","status":"failed","inputs":{},"error":{"code":"AGENT_TIMEOUT","message":"slow"}}`
	review := `{"step_id":"review","step_name":"Review","agent":"human_input","status":"pending","inputs":{}}`
	tests := map[string]struct {
		payload     json.RawMessage
		want        *engine.RunResult
		wantSummary string
	}{
		"completed": {
			payload:     callback("completed", write, `,"outputs":{"script":"the script"}`),
			want:        &engine.RunResult{Status: engine.StatusCompleted, Outputs: map[string]any{"script": "the script"}},
			wantSummary: engine.StepCompleted,
		},
		"failed with a code": {
			payload: callback("failed", failedWrite, `,"outputs":{},"error":{"code":"AGENT_TIMEOUT","message":"the writer timed out"}`),
			want: &engine.RunResult{Status: engine.StatusFailed, Outputs: nil,
				Error: &engine.RunError{Code: "AGENT_TIMEOUT", Message: "the writer timed out", StepID: "write"}},
			wantSummary: engine.StepFailed,
		},
		"failed without a code": {
			payload: callback("failed", failedWrite, `,"error":"boom"`),
			want: &engine.RunResult{Status: engine.StatusFailed,
				Error: &engine.RunError{Code: "AGENT_EXECUTION_FAILED", Message: "boom", StepID: "write"}},
			wantSummary: engine.StepFailed,
		},
		"paused": {
			payload: callback("paused", review, `,"outputs":{"prompt":"Approve the draft?"}`),
			want: &engine.RunResult{Status: engine.StatusPaused, Outputs: map[string]any{"prompt": "Approve the draft?"},
				Awaiting: &engine.Awaiting{StepID: "review", Prompt: "Approve the draft?"}},
			wantSummary: engine.StepPending,
		},
		"paused without a pending step": {
			payload: callback("paused", write, `,"outputs":{"prompt":"OK?"}`),
			want: &engine.RunResult{Status: engine.StatusPaused, Outputs: map[string]any{"prompt": "OK?"},
				Awaiting: &engine.Awaiting{StepID: graph.DefaultReviewStep, Prompt: "OK?"}},
			wantSummary: engine.StepPending,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			eng, host := enginetest.New(t, graph.New(graph.Options{Tool: outbound.Tool{URL: "http://unused.test"}}))
			res, err := eng.Callback(t.Context(), nil, &engine.CallbackRequest{RunID: "run-1", Kind: "graph",
				Job: engine.Job{JobID: "job-1", RunID: "run-1", Type: engine.JobGraph}, Payload: tt.payload})
			if err != nil {
				t.Fatalf("Callback() error = %v", err)
			}
			if diff := cmp.Diff(tt.want, res); diff != "" {
				t.Errorf("Callback() mismatch (-want +got):\n%s", diff)
			}
			steps := host.Steps()
			if len(steps) != 3 {
				t.Fatalf("reported %d steps, want 3: %+v", len(steps), steps)
			}
			r := steps[0]
			if r.StepID != "research" || r.DurationMS == nil || *r.DurationMS != 1000 || r.TokensUsed == nil || *r.TokensUsed != 12 ||
				r.CostUSD == nil || *r.CostUSD != 0.0001 || r.StartedAt == nil || r.StartedAt.Nanosecond() != 5e8 || r.Engine != "graph" {
				t.Errorf("research step = %+v", r)
			}
			sum := steps[2]
			if sum.StepID != graph.SummaryStepID || sum.Status != tt.wantSummary || sum.Outputs["total_tokens"] != float64(24) ||
				sum.Outputs["total_cost_usd"] != 0.0002 || sum.DurationMS == nil || *sum.DurationMS != 2000 {
				t.Errorf("summary step = %+v", sum)
			}
			if sum.TokensUsed != nil {
				t.Errorf("summary step counts tokens %d again", *sum.TokensUsed)
			}
		})
	}
}

func TestCallbackTotalsWithoutStepTokens(t *testing.T) {
	t.Parallel()
	eng, host := enginetest.New(t, graph.New(graph.Options{}))
	payload := json.RawMessage(`{"run_id":"run-1","job_id":"job-1","status":"completed","outputs":{},"trace":[],
	  "metadata":{"total_tokens":30,"total_cost_usd":0.5,"duration_ms":10}}`)
	if _, err := eng.Callback(t.Context(), nil, &engine.CallbackRequest{RunID: "run-1", Job: engine.Job{JobID: "job-1"}, Payload: payload}); err != nil {
		t.Fatalf("Callback() error = %v", err)
	}
	sum := host.Steps()[0]
	if sum.TokensUsed == nil || *sum.TokensUsed != 30 || sum.CostUSD == nil || *sum.CostUSD != 0.5 {
		t.Errorf("summary step = %+v, want the totals as its tokens and cost", sum)
	}
}

func TestCallbackRefusesMismatches(t *testing.T) {
	t.Parallel()
	tests := map[string]json.RawMessage{
		"other job":      json.RawMessage(`{"run_id":"run-1","job_id":"job-2","status":"completed"}`),
		"other run":      json.RawMessage(`{"run_id":"run-2","job_id":"job-1","status":"completed"}`),
		"unknown status": json.RawMessage(`{"run_id":"run-1","job_id":"job-1","status":"exploded"}`),
		"not json":       json.RawMessage(`[1,2`),
	}
	for name, payload := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			eng, host := enginetest.New(t, graph.New(graph.Options{}))
			_, err := eng.Callback(t.Context(), nil, &engine.CallbackRequest{RunID: "run-1", Job: engine.Job{JobID: "job-1"}, Payload: payload})
			if errcode.Of(err) != errcode.Validation {
				t.Errorf("Callback(%s) error = %v, want VALIDATION_ERROR", payload, err)
			}
			if name != "unknown status" && len(host.Steps()) != 0 {
				t.Errorf("a refused callback reported steps %+v", host.Steps())
			}
		})
	}
}

func TestCallbackRunningReportsProgress(t *testing.T) {
	t.Parallel()
	eng, host := enginetest.New(t, graph.New(graph.Options{}))
	payload := json.RawMessage(`{"run_id":"run-1","job_id":"job-1","status":"running","trace":[{"step_id":"research","status":"running"}],"metadata":{"progress":40}}`)
	res, err := eng.Callback(t.Context(), nil, &engine.CallbackRequest{RunID: "run-1", Job: engine.Job{JobID: "job-1"}, Payload: payload})
	if err != nil || res.Status != engine.StatusWaiting {
		t.Fatalf("Callback() = %+v, %v; want waiting", res, err)
	}
	if p := host.Progress(); len(p) != 1 || p[0].Progress != 40 || p[0].CurrentStep != "research" {
		t.Errorf("progress = %+v", p)
	}
}

func TestCancelIsBestEffort(t *testing.T) {
	t.Parallel()
	runner, url := startRunner(t, http.StatusInternalServerError)
	for _, u := range []string{url, downURL(t)} {
		eng, _ := enginetest.New(t, graph.New(graph.Options{Tool: outbound.Tool{URL: u}}))
		if err := eng.Cancel(t.Context(), &engine.CancelRequest{RunID: "run-1", JobIDs: []string{"job-1"}}); err != nil {
			t.Errorf("Cancel() = %v, want nil", err)
		}
	}
	if p := runner.got(); len(p) != 1 || p[0].Path != "/cancel" || p[0].Body["run_id"] != "run-1" {
		t.Errorf("runner got %+v, want one POST /cancel", p)
	}
}

// The runner is ready only when GET /health answers 2xx: a server answering 404 there is up but not
// healthy (engine.ToolUnhealthy), one that does not answer is down.
func TestHealth(t *testing.T) {
	t.Parallel()
	_, ok := startRunner(t, http.StatusOK)
	notFound := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(notFound.Close)
	tests := map[string]struct {
		url     string
		want    errcode.Code
		answers bool
	}{
		"healthy":        {ok, "", false},
		"404 everywhere": {notFound.URL, errcode.GraphRunner, true},
		"down":           {downURL(t), errcode.GraphRunner, false},
		"not configured": {"", errcode.Validation, false},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := graph.New(graph.Options{Tool: outbound.Tool{URL: tt.url}}).Health(t.Context())
			if got := errcode.Of(err); got != tt.want || (err == nil) != (tt.want == "") || engine.ToolAnswers(err) != tt.answers {
				t.Errorf("Health() = %v (code %q, answers %t), want code %q, answers %t", err, got, engine.ToolAnswers(err), tt.want, tt.answers)
			}
		})
	}
}
