package greeter_test

import (
	"testing"

	"example.com/greeter"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/enginetest"
	"github.com/reelforge/reelforge/sdk/errcode"
)

func TestConformance(t *testing.T) { enginetest.Conformance(t, greeter.New) }

func TestGreets(t *testing.T) {
	eng, host := enginetest.New(t, greeter.New()) // real gRPC adapters, one process
	res, err := eng.Run(t.Context(), nil, &engine.RunRequest{RunID: "r1", Inputs: map[string]any{"name": "Ada"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outputs["greeting"] != "hello Ada" || len(host.Steps()) != 1 {
		t.Fatalf("got %+v, steps %+v", res, host.Steps())
	}
}

func TestNeedsAName(t *testing.T) {
	eng, _ := enginetest.New(t, greeter.New())
	_, err := eng.Run(t.Context(), nil, &engine.RunRequest{RunID: "r1", Inputs: map[string]any{}})
	if errcode.Of(err) != errcode.Validation {
		t.Fatalf("Run() without a name = %v, want VALIDATION_ERROR", err)
	}
}
