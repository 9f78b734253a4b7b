package engine_test

import (
	"context"

	"github.com/reelforge/reelforge/sdk/engine"
)

// greeter is a minimal engine: one step that greets the run's "name" input.
type greeter struct{}

func (greeter) Info(context.Context) (*engine.Info, error) {
	return &engine.Info{Name: "greeter", Version: "1.0.0", APIVersion: engine.APIVersion}, nil
}

func (greeter) Run(ctx context.Context, h engine.Host, req *engine.RunRequest) (*engine.RunResult, error) {
	step := engine.TraceStep{StepID: "greet", StepName: "Greet", Agent: "greeter", Status: engine.StepCompleted,
		Inputs: req.Inputs, Outputs: map[string]any{"greeting": "hello " + req.Inputs["name"].(string)}}
	if err := h.ReportStep(ctx, req.RunID, step); err != nil {
		return nil, err
	}
	if err := h.ReportProgress(ctx, req.RunID, 100, "greet"); err != nil {
		return nil, err
	}
	return &engine.RunResult{Status: engine.StatusCompleted, Outputs: step.Outputs}, nil
}

func (greeter) Callback(context.Context, engine.Host, *engine.CallbackRequest) (*engine.RunResult, error) {
	return &engine.RunResult{Status: engine.StatusCompleted}, nil
}

func (greeter) Cancel(context.Context, *engine.CancelRequest) error { return nil }

func (greeter) Health(context.Context) error { return nil }

// A plugin's main is one line: Serve takes over the process, speaks go-plugin's handshake on
// stdout and logs JSON to stderr. It is not run here: only a host can launch a plugin.
func ExampleServe() {
	engine.Serve(func() engine.Engine { return greeter{} })
}

// The host launches a plugin binary and gets an Engine that forwards to it.
func ExampleNewClient() {
	c, err := engine.NewClient(engine.ClientConfig{
		Name:   "greeter",
		Path:   "/var/lib/reelforge/plugins/greeter-plugin",
		SHA256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", // from the manifest
	})
	if err != nil {
		return // an EXTERNAL_SERVICE_ERROR: run the workflow on the in-process node engine instead
	}
	defer c.Kill()
	_, _ = c.Engine().Run(context.Background(), nil, &engine.RunRequest{RunID: "run-1", Inputs: map[string]any{"name": "Ada"}})
}
