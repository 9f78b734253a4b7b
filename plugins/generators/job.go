package generators

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// Execute does one job within ctx and returns when it is done, for the generators plugin (the
// host asks it with a Run of engine.JobWorkflow and awaits the answer). With an external generator
// configured for the job's type it submits the job and answers waiting (the generator calls back
// on the ai-callback route); otherwise it does the work here, in this process and its children,
// and answers the result, or the failure with its catalogue code. Cancelling ctx (the run was
// cancelled, the host went away) kills the job's tools at once.
func (d *executor) Execute(ctx context.Context, job *engine.Job, owner engine.UserContext, callbackURL string) (result json.RawMessage, failure *engine.RunError, waiting bool) {
	fail := func(err error) (json.RawMessage, *engine.RunError, bool) { return nil, d.failure(job.Type, err), false }
	if job == nil || job.JobID == "" {
		return fail(errcode.Invalid("job_id", "is required"))
	}
	if !engine.IsGeneratorJob(job.Type) {
		return fail(errcode.Invalid("type", fmt.Sprintf("%q is not a generator job type", job.Type)))
	}
	payload, err := jobPayload(job.Request)
	if err != nil {
		return fail(err)
	}
	if url := d.URL(job.Type); url != "" {
		if err := d.submit(ctx, url, job, payload, callbackURL); err != nil {
			return fail(err)
		}
		return nil, nil, true
	}
	if err := d.checkLocal(job, payload); err != nil {
		return fail(err)
	}
	// Local work ends at the job's time-out: timeout_at, which the host sets from the job type's
	// policy in the engine registry (manifests/engines/generators.yaml, the one place it is
	// written). A job without one (a caller other than the host) is bounded by ctx alone.
	cancel := context.CancelFunc(func() {})
	if !job.TimeoutAt.IsZero() {
		ctx, cancel = context.WithDeadline(ctx, job.TimeoutAt)
	}
	defer cancel()
	raw, f := d.work(ctx, &localJob{job: job, payload: payload, owner: owner})
	return raw, f, false
}
