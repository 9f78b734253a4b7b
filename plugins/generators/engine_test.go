package generators_test

import (
	"testing"

	"github.com/reelforge/reelforge/plugins/generators"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/enginetest"
	"github.com/reelforge/reelforge/sdk/errcode"
)

func TestEngineConformance(t *testing.T) {
	enginetest.Conformance(t, func() engine.Engine { return generators.New(generators.Options{}) })
}

// TestEngineRunsOnlyJobs: a Run of any workflow but engine.JobWorkflow is refused (its entry says
// workflows: false, so the host never sends one), and makes no job.
func TestEngineRunsOnlyJobs(t *testing.T) {
	t.Parallel()
	eng, host := enginetest.New(t, generators.New(generators.Options{}))
	_, err := eng.Run(t.Context(), nil, &engine.RunRequest{RunID: "run-1", Workflow: engine.Workflow{ID: "tts", Engine: generators.Name},
		Inputs: map[string]any{"job_type": "speech", "text": "hello"}})
	if errcode.Of(err) != errcode.Validation {
		t.Errorf("Run() of a workflow = %v, want VALIDATION_ERROR", err)
	}
	if jobs := host.Jobs(); len(jobs) != 0 {
		t.Errorf("jobs = %+v, want none", jobs)
	}
}
