package scheduler

import (
	"context"

	"github.com/reelforge/reelforge/host/auth"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// The built-in timer methods of the original product (SPEC.md Versioning 5). They remain for the
// fallback and are thin wrappers over the scheduler API's tick and trigger.

// Start turns the built-in timer on whatever the mode and starts it.
//
// Deprecated: the automation tool drives the timer through the scheduler API; the host switches
// the fallback on by itself (Serve). Start remains for the fallback.
func (s *Scheduler) Start(ctx context.Context) error {
	s.mu.Lock()
	s.forced = true
	s.mu.Unlock()
	return s.Serve(ctx)
}

// Stop stops the built-in timer.
//
// Deprecated: use Shutdown.
func (s *Scheduler) Stop() {
	s.mu.Lock()
	s.forced = false
	s.mu.Unlock()
	s.Shutdown()
}

// Tick runs one tick over every project.
//
// Deprecated: use TickNow, or let the automation tool call pending-tasks and trigger.
func (s *Scheduler) Tick(ctx context.Context) error {
	_, err := s.TickNow(ctx)
	return err
}

// HandleProject triggers the due strategy tasks of one project (at most MaxRunsPerProject).
//
// Deprecated: use TickNow or Trigger.
func (s *Scheduler) HandleProject(ctx context.Context, projectID string) error {
	_, err := s.tick(ctx, projectID)
	return err
}

// LaunchWorkflow starts a workflow for a project as the scheduler, as an ad-hoc strategy task.
//
// Deprecated: use Trigger (POST /api/scheduler/trigger).
func (s *Scheduler) LaunchWorkflow(ctx context.Context, user *auth.Principal, workflowID, projectID string, inputs map[string]any) (string, error) {
	if user == nil {
		return "", errcode.New(errcode.Authentication, "")
	}
	res, err := s.Trigger(ctx, TriggerParams{WorkflowID: workflowID, ProjectID: projectID, Inputs: inputs, User: user,
		Source: "launch-workflow"})
	if err != nil {
		return "", err
	}
	return res.RunID, nil
}
