package api

import (
	"encoding/json"

	"github.com/gofiber/fiber/v2"

	"github.com/reelforge/reelforge/host/tasks"
	"github.com/reelforge/reelforge/sdk/errcode"
)

func (s *Server) taskRoutes(r fiber.Router) {
	r.Post("/tasks", s.createTask)
	r.Post("/project/dispatch-task", s.createTask)
	r.Get("/tasks/:id", s.getTask)
	r.Post("/tasks/:id/cancel", s.cancelTask)
}

// Field sizes of a task.
const maxTaskTypeLen = 64

type taskInput struct {
	ProjectID   string          `json:"projectId"`
	ProjectID2  string          `json:"project_id"`
	Type        string          `json:"type"`
	InputParams json.RawMessage `json:"inputParams"`
	Input2      json.RawMessage `json:"input_params"`
}

func (s *Server) tasksService() (*tasks.Service, error) {
	if s.Tasks == nil {
		return nil, errcode.New(errcode.ResourceExhausted, "Tasks are not available")
	}
	return s.Tasks, nil
}

// createTask serves POST /api/tasks and POST /api/project/dispatch-task: {projectId, type,
// inputParams} -> {task} in PENDING.
func (s *Server) createTask(c *fiber.Ctx) error {
	svc, err := s.tasksService()
	if err != nil {
		return err
	}
	var in taskInput
	if err := decode(c, &in); err != nil {
		return err
	}
	if in.ProjectID == "" {
		in.ProjectID = in.ProjectID2
	}
	if in.InputParams == nil {
		in.InputParams = in.Input2
	}
	if err := fieldLen("type", in.Type, true, maxTaskTypeLen); err != nil {
		return err
	}
	if in.ProjectID == "" {
		return errcode.Invalid("projectId", "is required")
	}
	if len(in.InputParams) > 0 && string(in.InputParams) != "null" && in.InputParams[0] != '{' {
		return errcode.Invalid("inputParams", "must be an object")
	}
	p, err := s.bodyProject(c, in.ProjectID)
	if err != nil {
		return err
	}
	t, err := svc.Create(s.ctx(c), tasks.CreateParams{User: principal(c), ProjectID: p.ID, Type: in.Type, InputParams: in.InputParams})
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusCreated, fiber.Map{"task": t})
}

func (s *Server) getTask(c *fiber.Ctx) error {
	svc, err := s.tasksService()
	if err != nil {
		return err
	}
	t, err := svc.Get(s.ctx(c), principal(c), c.Params("id"))
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, fiber.Map{"task": t})
}

func (s *Server) cancelTask(c *fiber.Ctx) error {
	svc, err := s.tasksService()
	if err != nil {
		return err
	}
	t, err := svc.Cancel(s.ctx(c), principal(c), c.Params("id"))
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, fiber.Map{"task": t})
}
