package runs_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reelforge/reelforge/host/runs"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// jobPlugins serves eng as the generators plugin (nil: the plugin is down).
type jobPlugins struct{ eng engine.Engine }

func (p jobPlugins) Engine(name string) (engine.Engine, error) {
	if name == "generators" && p.eng != nil {
		return p.eng, nil
	}
	return nil, errcode.New(errcode.ExternalService, "engine "+name+" plugin is restarting")
}

// jobEngine answers the jobs handed to it with res or err, and records the requests.
type jobEngine struct {
	waitingEngine
	res  *engine.RunResult
	err  error
	reqs chan *engine.RunRequest
}

func (e *jobEngine) Run(_ context.Context, _ engine.Host, req *engine.RunRequest) (*engine.RunResult, error) {
	e.reqs <- req
	return e.res, e.err
}

// TestGeneratorJobsRunInThePlugin: a generator job goes to the generators plugin as a Run of
// engine.JobWorkflow carrying the job, and its answer resolves the job; with the plugin down,
// killed under the job, or plugins off, the job fails with its type's code (videogen:
// VIDEO_GEN_ERROR): it is never worked on in the host.
func TestGeneratorJobsRunInThePlugin(t *testing.T) {
	t.Parallel()
	killed := errcode.New(errcode.ExternalService, "engine plugin unavailable: rpc error: code = Unavailable")
	for name, tt := range map[string]struct {
		plugins                       runs.Engines
		eng                           *jobEngine
		wantStatus, wantCode, wantMsg string
	}{
		"done":        {eng: &jobEngine{res: &engine.RunResult{Status: engine.StatusCompleted, Outputs: map[string]any{"video_url": "/v.mp4"}}}, wantStatus: engine.JobCompleted},
		"failed":      {eng: &jobEngine{res: &engine.RunResult{Status: engine.StatusFailed, Error: &engine.RunError{Code: "EXTERNAL_SERVICE_ERROR", Message: "ffmpeg failed"}}}, wantStatus: engine.JobFailed, wantCode: "VIDEO_GEN_ERROR", wantMsg: "ffmpeg failed"},
		"killed":      {eng: &jobEngine{err: killed}, wantStatus: engine.JobFailed, wantCode: "VIDEO_GEN_ERROR", wantMsg: "stopped during the videogen job"},
		"down":        {plugins: jobPlugins{}, wantStatus: engine.JobFailed, wantCode: "VIDEO_GEN_ERROR", wantMsg: "generators plugin that runs videogen jobs is unavailable"},
		"plugins off": {wantStatus: engine.JobFailed, wantCode: "VIDEO_GEN_ERROR", wantMsg: "PLUGINS_ENABLED=false"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := openStore(t)
			deps := runs.Deps{Store: st, Manifests: testRegistry(t, graphManifest()), Plugins: tt.plugins,
				Jobs: func(s *runs.Service) runs.JobDispatcher { return runs.NewPluginJobs(s) }}
			if tt.eng != nil {
				tt.eng.reqs = make(chan *engine.RunRequest, 1)
				deps.Plugins = jobPlugins{tt.eng}
			}
			s := newService(t, deps, runs.Options{})
			defer s.StopJobs()
			r, err := s.Start(ctx, runs.StartParams{Workflow: "g", User: newUser(t, st)})
			if err != nil {
				t.Fatal(err)
			}
			job, err := s.CreateJob(ctx, &engine.JobRequest{RunID: r.ID, StepID: "render", Type: engine.JobVideogen,
				Request: json.RawMessage(`{"script":"hi"}`), Dispatch: true})
			if err != nil {
				t.Fatal(err)
			}
			if tt.eng != nil {
				req := <-tt.eng.reqs
				got, _ := req.Inputs["job"].(map[string]any)
				if req.Workflow.ID != engine.JobWorkflow || req.RunID != r.ID || got["job_id"] != job.JobID || req.User.UserID != r.UserID {
					t.Errorf("the plugin got %+v, want a %s Run of job %s of run %s for its owner", req, engine.JobWorkflow, job.JobID, r.ID)
				}
			}
			var j *store.Job
			for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				if j, err = st.GetJob(ctx, job.JobID); err == nil && j.Resolved() {
					break
				}
			}
			if j == nil || j.Status != tt.wantStatus {
				t.Fatalf("job = %+v, want %s", j, tt.wantStatus)
			}
			if tt.wantCode != "" {
				var e engine.RunError
				if err := json.Unmarshal(j.Error, &e); err != nil || e.Code != tt.wantCode || !strings.Contains(e.Message, tt.wantMsg) {
					t.Errorf("job error = %s, want %s saying %q", j.Error, tt.wantCode, tt.wantMsg)
				}
			} else if !strings.Contains(string(j.Result), "/v.mp4") {
				t.Errorf("job result = %s", j.Result)
			}
		})
	}
}

// cancelAfterTx is a store that ends a context the moment a transaction commits: armed before a
// CreateJob, it is the caller going away once the job is stored (a plugin killed during its
// CreateJob Host call ends that call's context).
type cancelAfterTx struct {
	store.Driver
	cancel atomic.Pointer[context.CancelFunc]
}

func (d *cancelAfterTx) InTx(ctx context.Context, fn func(tx store.Driver) error) error {
	err := d.Driver.InTx(ctx, fn)
	if c := d.cancel.Swap(nil); c != nil && err == nil {
		(*c)()
	}
	return err
}

// TestGeneratorJobDispatchedWhenItsCallerIsGone: a generator job stored by a CreateJob whose
// caller went away right after (its plugin was killed) still goes to the generators plugin and is
// resolved. Before, the dispatch ran on the dead caller's context: the job stayed running under
// this host's lease with nothing working on it, and the step executed again on the fallback
// awaited it until its time-out (120 s for speech): a run not terminal long after the kill.
func TestGeneratorJobDispatchedWhenItsCallerIsGone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := &cancelAfterTx{Driver: openStore(t)}
	eng := &jobEngine{res: &engine.RunResult{Status: engine.StatusCompleted, Outputs: map[string]any{"audio_url": "/a.wav"}},
		reqs: make(chan *engine.RunRequest, 1)}
	s := newService(t, runs.Deps{Store: st, Manifests: testRegistry(t, graphManifest()), Plugins: jobPlugins{eng},
		Jobs: func(s *runs.Service) runs.JobDispatcher { return runs.NewPluginJobs(s) }}, runs.Options{})
	defer s.StopJobs()
	r, err := s.Start(ctx, runs.StartParams{Workflow: "g", User: newUser(t, st)})
	if err != nil {
		t.Fatal(err)
	}
	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	st.cancel.Store(&cancel)
	job, err := s.CreateJob(callCtx, &engine.JobRequest{RunID: r.ID, StepID: "voice", Type: engine.JobSpeech,
		Request: json.RawMessage(`{"text":"hi"}`), Dispatch: true})
	if err != nil {
		t.Fatal(err)
	}
	if callCtx.Err() == nil {
		t.Fatal("the caller's context did not end once the job was stored: the test tests nothing")
	}
	var j *store.Job
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if j, err = st.GetJob(ctx, job.JobID); err == nil && j.Resolved() {
			break
		}
	}
	if j == nil || j.Status != engine.JobCompleted || !strings.Contains(string(j.Result), "/a.wav") {
		t.Fatalf("job = %+v, want completed by the plugin though its caller went away", j)
	}
}
