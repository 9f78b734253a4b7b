// Package greeter is an example Reelforge engine: it greets the run's "name" input.
package greeter

import (
	"context"

	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// Engine greets. engine.Base gives it Callback, Cancel and Health: it needs none of them.
type Engine struct{ engine.Base }

// New returns the engine, for engine.Serve.
func New() engine.Engine { return &Engine{} }

// Info names the engine: the host refuses a plugin whose name is not its engine entry's.
func (*Engine) Info(context.Context) (*engine.Info, error) {
	return &engine.Info{Name: "greeter", Version: "1.0.0", APIVersion: engine.APIVersion}, nil
}

// Run greets req.Inputs["name"] in one traced step.
func (*Engine) Run(ctx context.Context, h engine.Host, req *engine.RunRequest) (*engine.RunResult, error) {
	name, _ := req.Inputs["name"].(string)
	if name == "" {
		return nil, errcode.Invalid("name", "is required") // arrives in the host as VALIDATION_ERROR
	}
	greeting := engine.Settings()["greeting"] // from the engine entry's settings
	if greeting == "" {
		greeting = "hello"
	}
	out := map[string]any{"greeting": greeting + " " + name}
	step := engine.TraceStep{StepID: "greet", StepName: "Greet", Agent: "greeter",
		Status: engine.StepCompleted, Inputs: req.Inputs, Outputs: out, Engine: "greeter"}
	if err := h.ReportStep(ctx, req.RunID, step); err != nil {
		return nil, err
	}
	if err := h.ReportProgress(ctx, req.RunID, 100, "greet"); err != nil {
		return nil, err
	}
	return &engine.RunResult{Status: engine.StatusCompleted, Outputs: out}, nil
}
