package app

import (
	"context"
	"encoding/json"

	"github.com/reelforge/reelforge/host/launch"
	"github.com/reelforge/reelforge/host/runs"
	"github.com/reelforge/reelforge/host/store"
)

// launcher adapts the runs service to launch.Runner for the scheduler and the task worker.
type launcher struct{ s *runs.Service }

func (l launcher) Start(ctx context.Context, p launch.Params) (string, error) {
	r, err := l.s.Start(ctx, runs.StartParams{Workflow: p.Workflow, Inputs: p.Inputs, User: p.User, ProjectID: p.ProjectID,
		StrategyTaskID: p.StrategyTaskID, Trigger: p.Trigger, TriggeredBy: p.TriggeredBy})
	if err != nil {
		return "", err
	}
	return r.ID, nil
}

func (l launcher) Check(_ context.Context, workflow string, inputs map[string]any) error {
	return l.s.Check(workflow, inputs)
}

func (l launcher) Cancel(ctx context.Context, runID string) error {
	_, err := l.s.CancelRun(ctx, runID)
	return err
}

// forwardEnded tells every consumer of launch.Ended about each run that finishes.
func forwardEnded(s *runs.Service, consumers ...func(context.Context, launch.Ended)) {
	s.OnFinish(func(ctx context.Context, r *store.Run) {
		e := launch.Ended{RunID: r.ID, WorkflowID: r.WorkflowID, ProjectID: r.ProjectID, Status: r.Status,
			TriggeredBy: r.TriggeredBy, Outputs: r.Outputs, Error: r.Error, ProjectContext: r.ProjectContext}
		if trace, err := s.Trace(ctx, r.ID); err == nil {
			e.Trace, _ = json.Marshal(trace) // raw JSON steps as stored: they marshal
		}
		for _, c := range consumers {
			c(ctx, e)
		}
	})
}
