package api

import (
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/reelforge/reelforge/host/scheduler"
	"github.com/reelforge/reelforge/sdk/errcode"
)

func (s *Server) schedulerRoutes(r fiber.Router) {
	r.Get("/scheduler/pending-tasks", s.pendingTasks)
	r.Post("/scheduler/trigger", s.triggerTask)
	r.Get("/scheduler/status", s.schedulerStatus)
}

func (s *Server) schedulerService() (*scheduler.Scheduler, error) {
	if s.Scheduler == nil {
		return nil, errcode.New(errcode.ResourceExhausted, "The scheduler is not available")
	}
	return s.Scheduler, nil
}

// pendingTasks serves GET /api/scheduler/pending-tasks?limit (default 10, 1 to 100).
func (s *Server) pendingTasks(c *fiber.Ctx) error {
	sch, err := s.schedulerService()
	if err != nil {
		return err
	}
	limit := 10
	if v := c.Query("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > 100 {
			return errcode.Invalid("limit", "must be a whole number from 1 to 100")
		}
	}
	items, err := sch.PendingTasks(s.ctx(c), principal(c), limit)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"success": true, "data": fiber.Map{"tasks": items, "count": len(items),
		"fetched_at": time.Now().UTC().Format(time.RFC3339Nano)}})
}

type triggerInput struct {
	WorkflowID     string         `json:"workflow_id"`
	ProjectID      string         `json:"project_id"`
	StrategyTaskID string         `json:"strategy_task_id"`
	Inputs         map[string]any `json:"inputs"`
	TriggerSource  string         `json:"trigger_source"`
}

// triggerTask serves POST /api/scheduler/trigger.
func (s *Server) triggerTask(c *fiber.Ctx) error {
	sch, err := s.schedulerService()
	if err != nil {
		return err
	}
	var in triggerInput
	if err := decode(c, &in); err != nil {
		return err
	}
	if err := fieldLen("workflow_id", in.WorkflowID, true, 100); err != nil {
		return err
	}
	if err := fieldLen("project_id", in.ProjectID, true, 100); err != nil {
		return err
	}
	if err := fieldLen("strategy_task_id", in.StrategyTaskID, false, 200); err != nil {
		return err
	}
	if err := fieldLen("trigger_source", in.TriggerSource, false, 100); err != nil {
		return err
	}
	p, err := s.bodyProject(c, in.ProjectID)
	if err != nil {
		return err
	}
	res, err := sch.Trigger(s.ctx(c), scheduler.TriggerParams{WorkflowID: in.WorkflowID, ProjectID: p.ID,
		StrategyTaskID: in.StrategyTaskID, Inputs: in.Inputs, Source: in.TriggerSource, User: principal(c)})
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"success": true, "data": res})
}

// schedulerStatus serves GET /api/scheduler/status.
func (s *Server) schedulerStatus(c *fiber.Ctx) error {
	sch, err := s.schedulerService()
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"success": true, "data": sch.Status(s.ctx(c), principal(c))})
}
