package runs_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/reelforge/reelforge/host/manifest"
	"github.com/reelforge/reelforge/host/plugins"
	"github.com/reelforge/reelforge/host/runs"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/internal/testtool"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// ownerSearcher answers every search with one hit naming the user it searched as.
type ownerSearcher struct{}

func (ownerSearcher) Search(_ context.Context, req *engine.SearchRequest) ([]engine.SearchHit, error) {
	return []engine.SearchHit{{ChunkText: "searched as " + req.UserID}}, nil
}

// TestPluginCallsAreScopedToTheirRun runs a deliberately misbehaving plugin (the echo test plugin
// with a "probe" input, in its own process): it reports a step and progress into another user's
// run, creates a job there, awaits that run's job, searches as another user and in another
// project. Each is refused with AUTHORIZATION_ERROR and logged, except the search as another user,
// which the host runs as the run's owner; the other run is left untouched.
func TestPluginCallsAreScopedToTheirRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and launches the echo plugin")
	}
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "echo-plugin"), "github.com/reelforge/reelforge/internal/testplugin/echo/cmd/echo-plugin")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		t.Fatalf("go build echo-plugin: %v", err)
	}

	st := openStore(t)
	echoEntry, err := manifest.ParseEngine("engines/echo.yaml", []byte("name: echo\n"))
	if err != nil {
		t.Fatal(err)
	}
	engines, err := manifest.LoadEngines("../../manifests/engines")
	if err != nil {
		t.Fatal(err)
	}
	probe := &manifest.Manifest{ID: "probe", Name: "probe", Version: "1", Engine: "echo", Fallback: "node", Timeout: time.Minute,
		Steps: []engine.Step{{ID: "write", Name: "Write", Agent: "script_writer"}}}
	var logs testtool.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	set, err := plugins.NewSet(plugins.Config{Name: "echo", Dir: dir, Host: runs.NoRunHost("echo", log), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := set.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(set.Stop)
	s := newService(t, runs.Deps{Store: st, Manifests: manifest.NewRegistryWith(append(engines, echoEntry), probe, graphManifest()),
		Plugins: set, Searcher: ownerSearcher{}, Log: log}, runs.Options{})

	// Another user's run, waiting on a job.
	other := newUser(t, st)
	theirs, err := s.Start(ctx, runs.StartParams{Workflow: "g", User: other})
	if err != nil {
		t.Fatal(err)
	}
	theirJob, err := s.CreateJob(ctx, &engine.JobRequest{RunID: theirs.ID, StepID: "x", Type: engine.JobGraph})
	if err != nil {
		t.Fatal(err)
	}

	me := newUser(t, st)
	s.StartExecutor(ctx)
	defer s.StopExecutor()
	testtool.Eventually(t, time.Minute, "the echo plugin to be ready", func() bool { return set.States()["echo"] == plugins.StateReady })
	mine, err := s.Start(ctx, runs.StartParams{Workflow: "probe", User: me, Inputs: map[string]any{"probe": map[string]any{
		"run": theirs.ID, "job": theirJob.JobID, "user": other.UserID, "project": "not-my-project"}}})
	if err != nil {
		t.Fatal(err)
	}
	got := waitStatus(t, st, mine.ID, store.RunCompleted, store.RunFailed)
	if got.Status != store.RunCompleted || got.Engine != "echo" {
		t.Fatalf("probe run = %s on %s (%s), want completed on echo", got.Status, got.Engine, got.Error)
	}
	var out struct {
		Probe map[string]any `json:"probe"`
	}
	if err := json.Unmarshal(got.Outputs, &out); err != nil {
		t.Fatal(err)
	}
	refused := string(errcode.Authorization)
	want := map[string]any{
		"report_step": refused, "report_progress": refused, "create_job": refused, "wait_job": refused,
		"search_project": refused, "search_user": "ok", "search_hits": []any{"searched as " + me.UserID}, "own_step": "ok",
	}
	if diff := cmp.Diff(want, out.Probe); diff != "" {
		t.Errorf("what the host answered the misbehaving plugin (-want +got):\n%s", diff)
	}
	if n := strings.Count(logs.String(), "engine call outside its run refused"); n != 5 {
		t.Errorf("%d refusals logged, want 5:\n%s", n, logs.String())
	}

	// The other run is as it was: no step, no progress, one job.
	steps, _ := st.ListTraceSteps(ctx, theirs.ID)
	for _, ts := range steps {
		if ts.StepID == "trespass" {
			t.Errorf("the other run got the plugin's step %+v", ts)
		}
	}
	if r, _ := st.GetRun(ctx, theirs.ID); r.Progress == 50 {
		t.Errorf("the other run's progress = %v, set by the plugin", r.Progress)
	}
	if jobs, _ := st.ListRunJobs(ctx, theirs.ID); len(jobs) != 1 {
		t.Errorf("the other run has %d jobs, want its one", len(jobs))
	}
}

// A Host call that serves no run (no call id, or one that ended) is refused and logged.
func TestNoRunHostRefuses(t *testing.T) {
	t.Parallel()
	var logs testtool.Buffer
	h := runs.NoRunHost("rogue", slog.New(slog.NewTextHandler(&logs, nil)))
	ctx := context.Background()
	_, jobErr := h.CreateJob(ctx, &engine.JobRequest{RunID: "r", Type: engine.JobGraph})
	_, waitErr := h.WaitJob(ctx, "j")
	_, searchErr := h.Search(ctx, &engine.SearchRequest{UserID: "u", Query: "q"})
	_, genErr := h.Generate(ctx, &engine.GenerateRequest{Prompt: "p"})
	for name, err := range map[string]error{
		"ReportStep": h.ReportStep(ctx, "r", engine.TraceStep{StepID: "s"}), "ReportProgress": h.ReportProgress(ctx, "r", 1, "s"),
		"CreateJob": jobErr, "WaitJob": waitErr, "Search": searchErr, "Generate": genErr,
	} {
		if errcode.Of(err) != errcode.Authorization {
			t.Errorf("%s without a run = %v, want AUTHORIZATION_ERROR", name, err)
		}
	}
	if n := strings.Count(logs.String(), "engine=rogue"); n != 6 {
		t.Errorf("%d refusals logged, want 6:\n%s", n, logs.String())
	}
}
