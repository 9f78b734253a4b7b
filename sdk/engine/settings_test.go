package engine_test

import (
	"testing"

	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/enginetest"
	"github.com/reelforge/reelforge/sdk/errcode"
)

func TestDecodeCallback(t *testing.T) {
	t.Parallel()
	h := enginetest.NewRecordingHost()
	var p struct {
		JobID string `json:"job_id"`
	}
	tests := map[string]struct {
		req  *engine.CallbackRequest
		host engine.Host
		want errcode.Code
	}{
		"no request":  {nil, h, errcode.Validation},
		"no host":     {&engine.CallbackRequest{Payload: []byte(`{}`)}, nil, errcode.Validation},
		"not JSON":    {&engine.CallbackRequest{Payload: []byte(`{`)}, h, errcode.Validation},
		"its payload": {&engine.CallbackRequest{Payload: []byte(`{"job_id":"j1"}`)}, h, ""},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := errcode.Of(engine.DecodeCallback(tt.req, tt.host, "graph", &p)); got != tt.want {
				t.Errorf("DecodeCallback() code = %q, want %q", got, tt.want)
			}
		})
	}
	if p.JobID != "j1" {
		t.Errorf("payload job_id = %q, want j1", p.JobID)
	}
}

func TestDecodeRun(t *testing.T) {
	t.Parallel()
	h := enginetest.NewRecordingHost()
	var set struct {
		GraphID string `json:"graph_id"`
	}
	run := func(settings string) *engine.RunRequest {
		return &engine.RunRequest{RunID: "r1", Workflow: engine.Workflow{ID: "w", Settings: []byte(settings)}}
	}
	tests := map[string]struct {
		req  *engine.RunRequest
		host engine.Host
		want errcode.Code
	}{
		"no request":        {nil, h, errcode.Validation},
		"no host":           {run(`{}`), nil, errcode.Validation},
		"no run id":         {&engine.RunRequest{}, h, errcode.Validation},
		"settings not JSON": {run(`{`), h, errcode.Validation},
		"no settings":       {run(``), h, ""},
		"its settings":      {run(`{"graph_id":"g1"}`), h, ""},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := errcode.Of(engine.DecodeRun(tt.req, tt.host, "graph", &set)); got != tt.want {
				t.Errorf("DecodeRun() code = %q, want %q", got, tt.want)
			}
		})
	}
	if set.GraphID != "g1" {
		t.Errorf("settings graph_id = %q, want g1", set.GraphID)
	}
}
