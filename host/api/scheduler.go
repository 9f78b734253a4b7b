package api

import (
	"context"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/reelforge/reelforge/host/scheduler"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// schedulerOperations declares the Scheduler family (typed: operations.go).
func (s *Server) schedulerOperations(api huma.API) {
	const tag = "Scheduler"
	register(api, op{Method: "GET", Path: "/api/scheduler/pending-tasks", Tag: tag, Summary: "Strategy tasks due"}, s.pendingTasks)
	register(api, op{Method: "POST", Path: "/api/scheduler/trigger", Tag: tag, Summary: "Trigger a strategy task's workflow",
		Errors: []int{403, 404, 409}}, s.triggerTask)
	register(api, op{Method: "GET", Path: "/api/scheduler/status", Tag: tag, Summary: "Scheduler mode and limits",
		Desc: "last_tick is this host's last timer tick: due tasks over their owner's quota are listed in skipped " +
			"(and emitted as scheduler.task.skipped) and stay due. Admins and automation keys see the whole tick; " +
			"anyone else only the part of their own projects."}, s.schedulerStatus)
}

func (s *Server) schedulerService() (*scheduler.Scheduler, error) {
	if s.Scheduler == nil {
		return nil, errcode.New(errcode.ResourceExhausted, "The scheduler is not available")
	}
	return s.Scheduler, nil
}

type pendingTasksInput struct {
	Limit int `query:"limit" minimum:"1" maximum:"100" default:"10"`
}

type pendingTasksAnswer struct {
	Tasks     []scheduler.PendingTask `json:"tasks"`
	Count     int                     `json:"count"`
	FetchedAt time.Time               `json:"fetched_at"`
}

// pendingTasks serves GET /api/scheduler/pending-tasks?limit (default 10, 1 to 100).
func (s *Server) pendingTasks(ctx context.Context, in *pendingTasksInput) (*Data[pendingTasksAnswer], error) {
	sch, err := s.schedulerService()
	if err != nil {
		return nil, err
	}
	items, err := sch.PendingTasks(ctx, caller(ctx), in.Limit)
	if err != nil {
		return nil, err
	}
	return answerData(pendingTasksAnswer{Tasks: items, Count: len(items), FetchedAt: time.Now().UTC()})
}

type triggerInput struct {
	Body struct {
		WorkflowID     string         `json:"workflow_id" minLength:"1" maxLength:"100" doc:"voiceover, graphic, music, video, live, short_drama, ..."`
		ProjectID      string         `json:"project_id" minLength:"1" maxLength:"100"`
		StrategyTaskID string         `json:"strategy_task_id,omitempty" maxLength:"200"`
		Inputs         map[string]any `json:"inputs,omitempty" doc:"summary, platform, ..."`
		TriggerSource  string         `json:"trigger_source,omitempty" maxLength:"100"`
	}
}

// triggerTask serves POST /api/scheduler/trigger.
func (s *Server) triggerTask(ctx context.Context, in *triggerInput) (*Data[scheduler.Triggered], error) {
	sch, err := s.schedulerService()
	if err != nil {
		return nil, err
	}
	b := in.Body
	p, err := s.namedProject(ctx, b.ProjectID)
	if err != nil {
		return nil, err
	}
	res, err := sch.Trigger(ctx, scheduler.TriggerParams{WorkflowID: b.WorkflowID, ProjectID: p.ID,
		StrategyTaskID: b.StrategyTaskID, Inputs: b.Inputs, Source: b.TriggerSource, User: caller(ctx)})
	if err != nil {
		return nil, err
	}
	return answerData(*res)
}

// schedulerStatus serves GET /api/scheduler/status.
func (s *Server) schedulerStatus(ctx context.Context, _ *struct{}) (*Data[scheduler.Status], error) {
	sch, err := s.schedulerService()
	if err != nil {
		return nil, err
	}
	return answerData(sch.Status(ctx, caller(ctx)))
}
