package generators_test

import (
	"encoding/json"
	"testing"

	"github.com/reelforge/reelforge/plugins/generators"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/enginetest"
)

// plugin serves a generators engine with opts over the plugin protocol (sdk/enginetest), as the
// generators plugin serves it to the host.
func plugin(t *testing.T, opts generators.Options) engine.Engine {
	t.Helper()
	eng, _ := enginetest.New(t, generators.New(opts))
	return eng
}

// jobRun is the request by which the host (runs.PluginJobs) hands job to the generators plugin: a
// Run of engine.JobWorkflow carrying the job, for the run's owner. A job without a run gets run-1.
func jobRun(job *engine.Job, owner engine.UserContext, callbackURL string) *engine.RunRequest {
	if job.RunID == "" {
		job.RunID = "run-1"
	}
	var asInput map[string]any
	raw, _ := json.Marshal(job)
	_ = json.Unmarshal(raw, &asInput)
	return &engine.RunRequest{RunID: job.RunID, Workflow: engine.Workflow{ID: engine.JobWorkflow, Name: job.Type + " job", Engine: generators.Name},
		Inputs: map[string]any{"job": asInput}, User: owner, CallbackURL: callbackURL, Attempt: 1}
}

// doJob runs job on eng as the host does and returns the answer.
func doJob(t *testing.T, eng engine.Engine, job *engine.Job, owner engine.UserContext, callbackURL string) *engine.RunResult {
	t.Helper()
	res, err := eng.Run(t.Context(), nil, jobRun(job, owner, callbackURL))
	if err != nil {
		t.Fatalf("Run of %s job %s: %v", job.Type, job.JobID, err)
	}
	return res
}
