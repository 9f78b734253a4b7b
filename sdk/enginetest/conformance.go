package enginetest

import (
	"context"
	"testing"
	"time"

	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// CancelDeadline is how long Run may keep going after its context is cancelled.
const CancelDeadline = 2 * time.Second

// Conformance checks an engine built by factory against the contract, through the real gRPC
// adapters:
//   - Info answers a name, a version and api_version = engine.APIVersion;
//   - Health answers nil;
//   - Run returns within CancelDeadline of its context being cancelled;
//   - an error Run returns for an invalid request (no run id, empty workflow) has the same
//     catalogue code through gRPC as when the engine is called directly;
//   - every catalogue code an engine returns arrives in the host with the same code.
func Conformance(t *testing.T, factory func() engine.Engine) {
	t.Helper()

	t.Run("Info", func(t *testing.T) {
		t.Parallel()
		eng, _ := New(t, factory())
		info, err := eng.Info(t.Context())
		if err != nil {
			t.Fatalf("Info() error = %v", err)
		}
		if info.Name == "" || info.Version == "" {
			t.Errorf("Info() = %+v, want a name and a version", info)
		}
		if info.APIVersion != engine.APIVersion {
			t.Errorf("Info().APIVersion = %d, want %d", info.APIVersion, engine.APIVersion)
		}
	})

	t.Run("Health", func(t *testing.T) {
		t.Parallel()
		eng, _ := New(t, factory())
		if err := eng.Health(t.Context()); err != nil {
			t.Errorf("Health() = %v, want nil", err)
		}
	})

	t.Run("CancelStopsRun", func(t *testing.T) {
		t.Parallel()
		impl := factory()
		eng, _ := New(t, impl)
		info, err := eng.Info(t.Context())
		if err != nil {
			t.Fatalf("Info() error = %v", err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() {
			_, err := eng.Run(ctx, nil, conformanceRequest(info.Name))
			done <- err
		}()
		time.Sleep(20 * time.Millisecond)
		cancel()
		select {
		case <-done:
		case <-time.After(CancelDeadline):
			t.Fatalf("Run() still running %v after its context was cancelled", CancelDeadline)
		}
	})

	t.Run("ErrorCodeOfInvalidRequest", func(t *testing.T) {
		t.Parallel()
		impl := factory()
		eng, _ := New(t, impl)
		bad := &engine.RunRequest{}
		_, direct := impl.Run(t.Context(), NewRecordingHost(), bad)
		_, remote := eng.Run(t.Context(), nil, bad)
		if errcode.Of(remote) != errcode.Of(direct) {
			t.Errorf("Run(invalid) through gRPC: code %q (%v), want %q as called directly (%v)",
				errcode.Of(remote), remote, errcode.Of(direct), direct)
		}
	})

	t.Run("ErrorCodesCrossTheBoundary", func(t *testing.T) {
		t.Parallel()
		for _, code := range errcode.Codes() {
			eng, _ := New(t, failing{Engine: factory(), err: errcode.E("conformance", code, "public "+string(code), nil)})
			_, err := eng.Run(t.Context(), nil, conformanceRequest("conformance"))
			if got := errcode.Of(err); got != code {
				t.Errorf("Run() returning %s arrived as %q (%v)", code, got, err)
			}
			if e := errcode.As(err); e != nil && e.Msg != "public "+string(code) {
				t.Errorf("Run() returning %s: message %q, want %q", code, e.Msg, "public "+string(code))
			}
		}
	})
}

func conformanceRequest(engineName string) *engine.RunRequest {
	return &engine.RunRequest{
		RunID:    "conformance-run",
		Workflow: engine.Workflow{ID: "conformance", Name: "conformance", Version: "1", Engine: engineName},
		Inputs:   map[string]any{"topic": "conformance"},
		User:     engine.UserContext{UserID: "conformance-user"},
		Attempt:  1,
	}
}

// failing is an engine whose Run returns err.
type failing struct {
	engine.Engine
	err error
}

func (f failing) Run(context.Context, engine.Host, *engine.RunRequest) (*engine.RunResult, error) {
	return nil, f.err
}
