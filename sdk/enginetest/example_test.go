package enginetest_test

import (
	"fmt"
	"testing"

	"github.com/reelforge/reelforge/internal/testplugin/echo"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/enginetest"
)

// In an engine's tests, New runs it through the real gRPC adapters and records what it reports.
func ExampleNew() {
	_ = func(t *testing.T) { // a test of the engine
		eng, host := enginetest.New(t, echo.New())
		res, err := eng.Run(t.Context(), nil, &engine.RunRequest{RunID: "r1", Inputs: map[string]any{"topic": "cats"}})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Println(res.Status, len(host.Steps()), host.Progress()[0].Progress) // completed 2 100
	}
}

func TestExampleNew(t *testing.T) {
	t.Parallel()
	eng, host := enginetest.New(t, echo.New())
	res, err := eng.Run(t.Context(), nil, &engine.RunRequest{RunID: "r1", Inputs: map[string]any{"topic": "cats"}})
	if err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	if res.Status != engine.StatusCompleted || len(host.Steps()) != 2 {
		t.Errorf("Run() = %+v with %d steps, want completed with 2", res, len(host.Steps()))
	}
}

// Every engine runs the contract checks once.
func ExampleConformance() {
	_ = func(t *testing.T) { enginetest.Conformance(t, echo.New) }
}

// A Host passed to Run answers that call's callbacks; New's RecordingHost answers calls with nil.
func TestPerCallHost(t *testing.T) {
	t.Parallel()
	eng, fallback := enginetest.New(t, echo.New())
	mine := enginetest.NewRecordingHost()
	if _, err := eng.Run(t.Context(), mine, &engine.RunRequest{RunID: "r", Inputs: map[string]any{"a": "b"}}); err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	if got, want := len(mine.Steps()), 2; got != want {
		t.Errorf("per-call host recorded %d steps, want %d", got, want)
	}
	if got := len(fallback.Steps()); got != 0 {
		t.Errorf("fallback host recorded %d steps, want 0", got)
	}
}
