package automation_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/reelforge/reelforge/internal/outbound"
	"github.com/reelforge/reelforge/plugins/automation"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/enginetest"
	"github.com/reelforge/reelforge/sdk/errcode"
)

type fakeTool struct {
	status int
	mu     sync.Mutex
	paths  []string
	bodies []map[string]any
}

func (f *fakeTool) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	f.mu.Lock()
	f.paths, f.bodies = append(f.paths, r.URL.Path), append(f.bodies, body)
	f.mu.Unlock()
	w.WriteHeader(f.status)
	_, _ = w.Write([]byte(`{"message":"Workflow was started"}`))
}

func startTool(t *testing.T, status int) (*fakeTool, string) {
	t.Helper()
	f := &fakeTool{status: status}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL + "/webhook"
}

func downURL(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	return srv.URL
}

func request() *engine.RunRequest {
	return &engine.RunRequest{
		RunID:       "run-1",
		Workflow:    engine.Workflow{ID: "music", Engine: "automation", Settings: json.RawMessage(`{"webhook_path":"music-generation"}`)},
		Inputs:      map[string]any{"topic": "rain"},
		User:        engine.UserContext{UserID: "u-1"},
		Attempt:     1,
		CallbackURL: "http://host.test/",
		Credential:  "rft_test-credential",
	}
}

func TestConformance(t *testing.T) {
	_, url := startTool(t, http.StatusOK)
	enginetest.Conformance(t, func() engine.Engine { return automation.New(automation.Options{Tool: outbound.Tool{URL: url}}) })
}

func TestRunTriggersWebhook(t *testing.T) {
	t.Parallel()
	tool, url := startTool(t, http.StatusOK)
	eng, host := enginetest.New(t, automation.New(automation.Options{Tool: outbound.Tool{URL: url}}))
	res, err := eng.Run(t.Context(), nil, request())
	if err != nil || res.Status != engine.StatusWaiting {
		t.Fatalf("Run() = %+v, %v; want waiting", res, err)
	}
	jobs := host.Jobs()
	if len(jobs) != 1 || jobs[0].Type != engine.JobAutomation {
		t.Fatalf("jobs = %+v, want one automation job", jobs)
	}
	tool.mu.Lock()
	paths, bodies := tool.paths, tool.bodies
	tool.mu.Unlock()
	if len(paths) != 1 || paths[0] != "/webhook/music-generation" {
		t.Fatalf("tool called at %v, want /webhook/music-generation", paths)
	}
	b := bodies[0]
	want := map[string]any{"job_id": jobs[0].JobID, "run_id": "run-1", "workflow_name": "music", "workflow_id": "music",
		"inputs": map[string]any{"topic": "rain"}, "callback_url": "http://host.test/api/webhooks/automation-callback",
		"user_context": map[string]any{"user_id": "u-1"}, "project_context": map[string]any{},
		"reelforge_url": "http://host.test", "reelforge_token": "rft_test-credential"}
	if diff := cmp.Diff(want, b); diff != "" {
		t.Errorf("webhook body mismatch (-want +got):\n%s", diff)
	}
	// The credential is a secret: the job's stored request does not hold it.
	if strings.Contains(string(jobs[0].Request), "rft_") {
		t.Errorf("the job's request holds the credential: %s", jobs[0].Request)
	}
}

func TestRunToolFailures(t *testing.T) {
	t.Parallel()
	_, url500 := startTool(t, http.StatusInternalServerError)
	for name, url := range map[string]string{"answers 500": url500, "down": downURL(t), "not configured": ""} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			eng, host := enginetest.New(t, automation.New(automation.Options{Tool: outbound.Tool{URL: url}, RetryBackoff: time.Millisecond}))
			_, err := eng.Run(t.Context(), nil, request())
			if got := errcode.Of(err); got != errcode.AutomationWebhookFailed {
				t.Errorf("Run() error = %v (%s), want AUTOMATION_WEBHOOK_FAILED", err, got)
			}
			if name != "not configured" {
				if s := host.Steps(); len(s) != 1 || s[0].Status != engine.StepFailed {
					t.Errorf("steps = %+v, want one failed step", s)
				}
			}
		})
	}
}

func TestCallback(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		payload string
		want    *engine.RunResult
	}{
		"completed": {
			payload: `{"job_id":"job-1","workflow_name":"music","status":"completed","result":{"audio_url":"http://x/a.mp3","duration":12.5,"style":"pop"}}`,
			want: &engine.RunResult{Status: engine.StatusCompleted,
				Outputs: map[string]any{"audio_url": "http://x/a.mp3", "duration": 12.5, "style": "pop", "workflow_name": "music"}},
		},
		"failed with a code": {
			payload: `{"job_id":"job-1","workflow_name":"music","status":"failed","result":{},"error":{"code":"MUSIC_API_ERROR","message":"no credits"}}`,
			want: &engine.RunResult{Status: engine.StatusFailed,
				Error: &engine.RunError{Code: "MUSIC_API_ERROR", Message: "no credits", StepID: automation.StepID}},
		},
		"failed with a message": {
			payload: `{"job_id":"job-1","workflow_name":"music","status":"failed","error":"boom"}`,
			want: &engine.RunResult{Status: engine.StatusFailed,
				Error: &engine.RunError{Code: "AUTOMATION_WEBHOOK_FAILED", Message: "boom", StepID: automation.StepID}},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			eng, host := enginetest.New(t, automation.New(automation.Options{}))
			res, err := eng.Callback(t.Context(), nil, &engine.CallbackRequest{RunID: "run-1", Kind: "automation",
				Job: engine.Job{JobID: "job-1", RunID: "run-1"}, Payload: json.RawMessage(tt.payload)})
			if err != nil {
				t.Fatalf("Callback() error = %v", err)
			}
			if diff := cmp.Diff(tt.want, res); diff != "" {
				t.Errorf("Callback() mismatch (-want +got):\n%s", diff)
			}
			if s := host.Steps(); len(s) != 1 || s[0].StepID != automation.StepID {
				t.Errorf("steps = %+v, want the automation step", s)
			}
		})
	}
}

func TestCallbackRefusesMismatches(t *testing.T) {
	t.Parallel()
	for name, payload := range map[string]string{
		"other job":      `{"job_id":"job-2","status":"completed"}`,
		"unknown status": `{"job_id":"job-1","status":"exploded"}`,
		"not json":       `{`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			eng, host := enginetest.New(t, automation.New(automation.Options{}))
			_, err := eng.Callback(t.Context(), nil, &engine.CallbackRequest{RunID: "run-1", Job: engine.Job{JobID: "job-1"}, Payload: json.RawMessage(payload)})
			if errcode.Of(err) != errcode.Validation || len(host.Steps()) != 0 {
				t.Errorf("Callback(%s) error = %v, steps %v; want VALIDATION_ERROR and no step", payload, err, host.Steps())
			}
		})
	}
}

// n8nMissingWebhook answers like n8n for a webhook that is not registered, the first n calls.
type n8nMissingWebhook struct {
	mu    sync.Mutex
	calls int
	n     int
}

func (f *n8nMissingWebhook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.calls++
	missing := f.calls <= f.n
	f.mu.Unlock()
	if missing {
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"code":404,"message":"The requested webhook \"POST music-generation\" is not registered.","hint":"Activate the workflow"}`))
		return
	}
	_, _ = w.Write([]byte(`{"message":"Workflow was started"}`))
}

// TestRunRetriesRefusedWebhook: a refused webhook call is retried as the job's policy allows (the
// harness's job has 3 retries), so a webhook registered late still gets the run; when every call
// is refused the failed step says what n8n answered (status, message, hint) and how many calls
// were made.
func TestRunRetriesRefusedWebhook(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		missing   int
		wantCalls int
		wantErr   bool
	}{
		"registered after two refusals": {2, 3, false},
		"never registered":              {100, 4, true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tool := &n8nMissingWebhook{n: tc.missing}
			srv := httptest.NewServer(tool)
			t.Cleanup(srv.Close)
			eng, host := enginetest.New(t, automation.New(automation.Options{Tool: outbound.Tool{URL: srv.URL + "/webhook"}, RetryBackoff: time.Millisecond}))
			res, err := eng.Run(t.Context(), nil, request())
			tool.mu.Lock()
			calls := tool.calls
			tool.mu.Unlock()
			if calls != tc.wantCalls {
				t.Errorf("webhook calls = %d, want %d", calls, tc.wantCalls)
			}
			if !tc.wantErr {
				if err != nil || res.Status != engine.StatusWaiting {
					t.Errorf("Run = %+v, %v; want waiting for the callback", res, err)
				}
				return
			}
			if errcode.Of(err) != errcode.AutomationWebhookFailed {
				t.Fatalf("Run error = %v, want AUTOMATION_WEBHOOK_FAILED", err)
			}
			steps := host.Steps()
			if len(steps) != 1 || steps[0].Error == nil {
				t.Fatalf("steps = %+v, want one failed step", steps)
			}
			msg := steps[0].Error.Message
			for _, want := range []string{"status 404", `"POST music-generation" is not registered`, "Activate the workflow", "4 calls"} {
				if !strings.Contains(msg, want) {
					t.Errorf("step error %q lacks %q", msg, want)
				}
			}
		})
	}
}
