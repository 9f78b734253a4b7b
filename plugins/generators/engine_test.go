package generators_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/reelforge/reelforge/plugins/generators"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/enginetest"
	"github.com/reelforge/reelforge/sdk/errcode"
)

func TestEngineConformance(t *testing.T) {
	enginetest.Conformance(t, func() engine.Engine { return generators.New(generators.Options{}) })
}

func TestEngineRun(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		status string
		result string
		want   *engine.RunResult
	}{
		"completed": {status: engine.JobCompleted, result: `{"audio_url":"/a.wav","duration":2}`,
			want: &engine.RunResult{Status: engine.StatusCompleted,
				Outputs: map[string]any{"audio_url": "/a.wav", "duration": float64(2), "job_id": "job-1", "job_type": "speech"}}},
		"timeout": {status: engine.JobTimeout,
			want: &engine.RunResult{Status: engine.StatusFailed,
				Error: &engine.RunError{Code: "WORKFLOW_TIMEOUT", Message: "the speech job timed out", StepID: generators.StepID}}},
		"failed": {status: engine.JobFailed,
			want: &engine.RunResult{Status: engine.StatusFailed,
				Error: &engine.RunError{Code: "EXTERNAL_SERVICE_ERROR", Message: "the speech job failed", StepID: generators.StepID}}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			eng, host := enginetest.New(t, generators.New(generators.Options{}))
			go func() { // resolves the job once the engine created it, like the host's callback would
				for range 500 {
					if jobs := host.Jobs(); len(jobs) == 1 {
						_ = host.ResolveJob(jobs[0].JobID, tt.status, []byte(tt.result))
						return
					}
					time.Sleep(5 * time.Millisecond)
				}
			}()
			req := &engine.RunRequest{RunID: "run-1", Workflow: engine.Workflow{ID: "tts", Settings: json.RawMessage(`{"job_type":"speech"}`)},
				Inputs: map[string]any{"text": "hello", "role": "user", "user_id": "someone-else"}}
			res, err := eng.Run(t.Context(), nil, req)
			if err != nil {
				t.Fatalf("Run() error = %v", err)
			}
			if diff := cmp.Diff(tt.want, res); diff != "" {
				t.Errorf("Run() mismatch (-want +got):\n%s", diff)
			}
			jobs := host.Jobs()
			if len(jobs) != 1 || jobs[0].Type != engine.JobSpeech || string(jobs[0].Request) != `{"text":"hello"}` {
				t.Errorf("jobs = %+v, want one speech job with the inputs but no owner fields", jobs)
			}
		})
	}
}

func TestEngineRunNeedsAJobType(t *testing.T) {
	t.Parallel()
	eng, _ := enginetest.New(t, generators.New(generators.Options{}))
	_, err := eng.Run(t.Context(), nil, &engine.RunRequest{RunID: "run-1", Inputs: map[string]any{"job_type": "graph"}})
	if errcode.Of(err) != errcode.Validation {
		t.Errorf("Run() error = %v, want VALIDATION_ERROR", err)
	}
}

func TestEngineCallback(t *testing.T) {
	t.Parallel()
	eng, _ := enginetest.New(t, generators.New(generators.Options{}))
	tests := map[string]struct {
		payload string
		want    *engine.RunResult
	}{
		"completed": {payload: `{"job_id":"j","type":"music","status":"completed","result":{"audio_url":"u"}}`,
			want: &engine.RunResult{Status: engine.StatusCompleted, Outputs: map[string]any{"audio_url": "u", "job_id": "j", "job_type": "music"}}},
		"failed": {payload: `{"job_id":"j","type":"music","status":"failed","error":{"code":"QUOTA_EXCEEDED","message":"no credits"}}`,
			want: &engine.RunResult{Status: engine.StatusFailed, Error: &engine.RunError{Code: "QUOTA_EXCEEDED", Message: "no credits"}}},
		"failed without a code": {payload: `{"job_id":"j","type":"music","status":"failed"}`,
			want: &engine.RunResult{Status: engine.StatusFailed, Error: &engine.RunError{Code: "MUSIC_API_ERROR", Message: "the music job failed"}}},
	}
	for name, tt := range tests {
		res, err := eng.Callback(t.Context(), nil, &engine.CallbackRequest{RunID: "r", Kind: "ai", Job: engine.Job{JobID: "j"}, Payload: json.RawMessage(tt.payload)})
		if err != nil {
			t.Fatalf("%s: Callback() error = %v", name, err)
		}
		if diff := cmp.Diff(tt.want, res); diff != "" {
			t.Errorf("%s: Callback() mismatch (-want +got):\n%s", name, diff)
		}
	}
}
