package echo_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reelforge/reelforge/internal/testplugin/echo"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/enginetest"
	"github.com/reelforge/reelforge/sdk/errcode"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	enginetest.Conformance(t, echo.New)
}

func TestRunEchoesThroughGRPC(t *testing.T) {
	t.Parallel()
	eng, host := enginetest.New(t, echo.New())
	req := &engine.RunRequest{RunID: "r1", Inputs: map[string]any{"topic": "cats"},
		Workflow: engine.Workflow{ID: "w", Engine: "echo", Steps: []engine.Step{{ID: "a"}, {ID: "b"}}}}
	res, err := eng.Run(t.Context(), nil, req)
	if err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	want := map[string]any{"a": map[string]any{"topic": "cats"}, "b": map[string]any{"topic": "cats"}}
	if diff := cmp.Diff(want, res.Outputs); diff != "" {
		t.Errorf("Run() outputs (-want +got):\n%s", diff)
	}
	if got := len(host.Steps()); got != 4 {
		t.Errorf("recorded %d steps, want 4 (running and completed for each)", got)
	}
	wantProgress := []enginetest.Progress{{RunID: "r1", Progress: 50, CurrentStep: "a"}, {RunID: "r1", Progress: 100, CurrentStep: "b"}}
	if diff := cmp.Diff(wantProgress, host.Progress()); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
}

func TestRunFailCode(t *testing.T) {
	t.Parallel()
	eng, _ := enginetest.New(t, echo.New())
	_, err := eng.Run(t.Context(), nil, &engine.RunRequest{RunID: "r", Inputs: map[string]any{"fail_code": string(errcode.MusicAPI)}})
	if got := errcode.Of(err); got != errcode.MusicAPI {
		t.Errorf("Run(fail_code) code = %q (%v), want %q", got, err, errcode.MusicAPI)
	}
}
