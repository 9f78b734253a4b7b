package engine

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/reelforge/reelforge/sdk/errcode"
)

func ptr[T any](v T) *T { return &v }

func TestRunRequestRoundTrip(t *testing.T) {
	t.Parallel()
	tests := map[string]struct{ in *RunRequest }{
		"empty": {in: &RunRequest{}},
		"full": {in: &RunRequest{
			RunID: "r1",
			Workflow: Workflow{ID: "w", Name: "W", Version: "1", Engine: "node", Settings: json.RawMessage(`{"a":1}`),
				Timeout: 3 * time.Minute,
				Steps:   []Step{{ID: "s", Name: "S", Agent: "script_writer", DependsOn: []string{"x"}, With: json.RawMessage(`{"k":"v"}`), Retries: ptr(2)}}},
			Inputs:      map[string]any{"topic": "cats", "n": 2.0, "list": []any{"a"}},
			User:        UserContext{UserID: "u", Username: "n", Role: "admin"},
			Project:     ProjectContext{ProjectID: "p", ProjectName: "P", StrategyTaskID: "t"},
			Completed:   map[string]json.RawMessage{"s0": json.RawMessage(`{"out":1}`)},
			ResumeInput: map[string]any{"answer": "yes"},
			Attempt:     2, CallbackURL: "http://h/cb", Degraded: "plugin down",
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pb, err := toProtoRunRequest(tc.in)
			if err != nil {
				t.Fatalf("toProtoRunRequest() error = %v", err)
			}
			got, err := fromProtoRunRequest(pb)
			if err != nil {
				t.Fatalf("fromProtoRunRequest() error = %v", err)
			}
			if diff := cmp.Diff(tc.in, got); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunResultRoundTrip(t *testing.T) {
	t.Parallel()
	tests := map[string]struct{ in *RunResult }{
		"completed": {in: &RunResult{Status: StatusCompleted, Outputs: map[string]any{"script": "hi"}}},
		"failed":    {in: &RunResult{Status: StatusFailed, Error: &RunError{Code: "AGENT_TIMEOUT", Message: "m", StepID: "s", Details: json.RawMessage(`{"x":1}`)}}},
		"paused":    {in: &RunResult{Status: StatusPaused, Awaiting: &Awaiting{StepID: "h", Prompt: "ok?"}}},
		"duplicate": {in: &RunResult{Status: StatusWaiting, Duplicate: true}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pb, err := toProtoRunResult(tc.in)
			if err != nil {
				t.Fatalf("toProtoRunResult() error = %v", err)
			}
			got, err := fromProtoRunResult(pb)
			if err != nil {
				t.Fatalf("fromProtoRunResult() error = %v", err)
			}
			if diff := cmp.Diff(tc.in, got); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTraceStepAndJobRoundTrip(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 3, 10, 0, 0, 123, time.UTC)
	step := TraceStep{StepID: "s", StepName: "S", Agent: "a", Status: StepFailed, Inputs: map[string]any{"x": "y"},
		Outputs: map[string]any{"o": true}, StartedAt: &now, CompletedAt: &now, DurationMS: ptr(1.5), Confidence: ptr(0.9),
		TokensUsed: ptr(int64(12)), CostUSD: ptr(0.01), Error: &StepError{Code: "AGENT_TIMEOUT", Message: "slow"},
		Engine: "node", Degraded: "graph down"}
	ps, err := toProtoTraceStep(&step)
	if err != nil {
		t.Fatalf("toProtoTraceStep() error = %v", err)
	}
	gotStep, err := fromProtoTraceStep(ps)
	if err != nil {
		t.Fatalf("fromProtoTraceStep() error = %v", err)
	}
	if diff := cmp.Diff(step, gotStep); diff != "" {
		t.Errorf("trace step round trip (-want +got):\n%s", diff)
	}
	job := Job{JobID: "j", RunID: "r", Type: JobMusic, Status: JobCompleted, Request: json.RawMessage(`{"a":1}`),
		Result: json.RawMessage(`{"url":"u"}`), RetryCount: 1, MaxRetries: 3, CreatedAt: now, TimeoutAt: now.Add(time.Hour), ResolvedAt: &now}
	pj, err := toProtoJob(&job)
	if err != nil {
		t.Fatalf("toProtoJob() error = %v", err)
	}
	if diff := cmp.Diff(&job, fromProtoJob(pj)); diff != "" {
		t.Errorf("job round trip (-want +got):\n%s", diff)
	}
}

func TestEncodeJSONRejectsUnencodable(t *testing.T) {
	t.Parallel()
	_, err := toProtoRunRequest(&RunRequest{Inputs: map[string]any{"ch": make(chan int)}})
	if got := errcode.Of(err); got != errcode.Validation {
		t.Errorf("toProtoRunRequest(chan) code = %q, want %q", got, errcode.Validation)
	}
}

func TestStatusRoundTrip(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		in       error
		wantCode errcode.Code
		wantGRPC codes.Code
		wantMsg  string
		wantIs   error
	}{
		"catalogue error": {in: errcode.E("op", errcode.NotFound, "no such job", errors.New("sql: no rows")),
			wantCode: errcode.NotFound, wantGRPC: codes.NotFound, wantMsg: "no such job"},
		"default message":  {in: errcode.New(errcode.GraphRunner, ""), wantCode: errcode.GraphRunner, wantGRPC: codes.Unavailable, wantMsg: "Graph runner error"},
		"wrapped":          {in: errors.Join(errors.New("ctx"), errcode.New(errcode.Validation, "bad")), wantCode: errcode.Validation, wantGRPC: codes.InvalidArgument, wantMsg: "bad"},
		"plain error":      {in: errors.New("boom"), wantCode: errcode.Unknown, wantGRPC: codes.Unknown, wantMsg: "Internal error"},
		"context canceled": {in: context.Canceled, wantCode: errcode.WorkflowCancelled, wantGRPC: codes.Canceled, wantMsg: "Workflow cancelled", wantIs: context.Canceled},
		"deadline":         {in: context.DeadlineExceeded, wantCode: errcode.WorkflowTimeout, wantGRPC: codes.DeadlineExceeded, wantMsg: "Workflow timed out", wantIs: context.DeadlineExceeded},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			wire := toStatus(tc.in)
			if got := status.Code(wire); got != tc.wantGRPC {
				t.Errorf("toStatus(%v) gRPC code = %v, want %v", tc.in, got, tc.wantGRPC)
			}
			got := fromStatus("engine.Run", "engine plugin", wire)
			if c := errcode.Of(got); c != tc.wantCode {
				t.Errorf("fromStatus(toStatus(%v)) code = %q, want %q", tc.in, c, tc.wantCode)
			}
			if e := errcode.As(got); e == nil || e.Message() != tc.wantMsg {
				t.Errorf("fromStatus(toStatus(%v)) message = %v, want %q", tc.in, got, tc.wantMsg)
			}
			if tc.wantIs != nil && !errors.Is(got, tc.wantIs) {
				t.Errorf("errors.Is(%v, %v) = false, want true", got, tc.wantIs)
			}
		})
	}
}

func TestFromStatusWithoutCode(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		in   error
		want errcode.Code
	}{
		"unavailable": {in: status.Error(codes.Unavailable, "transport is closing"), want: errcode.ExternalService},
		"canceled":    {in: status.Error(codes.Canceled, "context canceled"), want: errcode.WorkflowCancelled},
		"internal":    {in: status.Error(codes.Internal, "x"), want: errcode.Unknown},
		"not status":  {in: errors.New("eof"), want: errcode.ExternalService},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := errcode.Of(fromStatus("op", "engine plugin", tc.in)); got != tc.want {
				t.Errorf("fromStatus(%v) code = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
