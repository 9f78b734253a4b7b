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
