package runs_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/reelforge/reelforge/host/auth"
	"github.com/reelforge/reelforge/host/manifest"
	"github.com/reelforge/reelforge/host/runs"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/plugins/node"
	"github.com/reelforge/reelforge/sdk/engine"
)

// credentialEngine is the node engine, noting the tool credential of each Run call.
type credentialEngine struct {
	engine.Engine
	mu    sync.Mutex
	creds []string
}

func (e *credentialEngine) Run(ctx context.Context, h engine.Host, req *engine.RunRequest) (*engine.RunResult, error) {
	e.mu.Lock()
	e.creds = append(e.creds, req.Credential)
	e.mu.Unlock()
	return e.Engine.Run(ctx, h, req)
}

// A Run call carries a tool credential of the run's owner and project, which the API admits while
// the run goes on (CheckGrant) and refuses once it has ended.
func TestRunHandsItsToolACredential(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openStore(t)
	authSvc := auth.New(st, "test-secret-test-secret-test-secret", 4)
	eng := &credentialEngine{Engine: node.New(node.Options{RetryBackoff: time.Millisecond})}
	wf := &manifest.Manifest{ID: "w", Name: "w", Version: "1", Engine: "node", Timeout: time.Minute,
		Steps: []engine.Step{{ID: "write", Name: "Write", Agent: "script_writer"}}}
	s := newService(t, runs.Deps{Store: st, Manifests: testRegistry(t, wf), InProcess: map[string]engine.Engine{"node": eng},
		Credentials: authSvc}, runs.Options{})
	s.StartExecutor(ctx)
	t.Cleanup(s.StopExecutor)
	owner := newUser(t, st)
	r, err := s.Start(ctx, runs.StartParams{Workflow: "w", User: owner, Inputs: map[string]any{"topic": "kilns"}})
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, st, r.ID, store.RunCompleted, store.RunFailed)
	eng.mu.Lock()
	creds := append([]string(nil), eng.creds...)
	eng.mu.Unlock()
	if len(creds) != 1 || !auth.IsTool(creds[0]) {
		t.Fatalf("credentials handed = %q, want one rft_ credential", creds)
	}
	p, err := authSvc.VerifyTool(ctx, creds[0])
	if err != nil || p.UserID != owner.UserID || p.ToolRun != r.ID || p.IsAdmin() {
		t.Fatalf("VerifyTool = %+v, %v; want the run owner's grant for run %s", p, err, r.ID)
	}
	if err := s.CheckGrant(ctx, p); err == nil {
		t.Errorf("CheckGrant after the run ended = nil, want a refusal")
	}
}
