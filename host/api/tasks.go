package api

import (
	"context"

	"github.com/danielgtaylor/huma/v2"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/tasks"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// taskOperations declares the Tasks family (typed: operations.go).
func (s *Server) taskOperations(api huma.API) {
	const tag = "Tasks"
	register(api, op{Method: "POST", Path: "/api/tasks", Tag: tag, Summary: "Create a task (PENDING)", Status: 201,
		Errors: []int{403}}, s.createTask)
	register(api, op{Method: "POST", Path: "/api/project/dispatch-task", Tag: tag,
		Summary: "Dispatch a task (whitepaper form of POST /api/tasks)", Status: 201, Errors: []int{403, 409}}, s.createTask)
	register(api, op{Method: "GET", Path: "/api/tasks/{id}", Tag: tag, Summary: "A task", Errors: []int{403, 404}}, s.getTask)
	register(api, op{Method: "POST", Path: "/api/tasks/{id}/cancel", Tag: tag, Summary: "Cancel a task",
		Errors: []int{403, 404, 409}}, s.cancelTask)
}

type createTaskInput struct {
	Body struct {
		ProjectID   string     `json:"projectId,omitempty" doc:"the project (required, here or as project_id)"`
		ProjectID2  string     `json:"project_id,omitempty" doc:"alias of projectId"`
		Type        string     `json:"type" minLength:"1" maxLength:"64"`
		InputParams jsonObject `json:"inputParams,omitempty" doc:"default {}"`
		Input2      jsonObject `json:"input_params,omitempty" doc:"alias of inputParams"`
	}
}

type taskPath struct {
	ID string `path:"id"`
}

type taskAnswer struct {
	Task *store.Task `json:"task"`
}

func (s *Server) tasksService() (*tasks.Service, error) {
	if s.Tasks == nil {
		return nil, errcode.New(errcode.ResourceExhausted, "Tasks are not available")
	}
	return s.Tasks, nil
}

// createTask serves POST /api/tasks and POST /api/project/dispatch-task: {projectId, type,
// inputParams} -> {task} in PENDING.
func (s *Server) createTask(ctx context.Context, in *createTaskInput) (*Data[taskAnswer], error) {
	svc, err := s.tasksService()
	if err != nil {
		return nil, err
	}
	b := in.Body
	if b.ProjectID == "" {
		b.ProjectID = b.ProjectID2
	}
	if b.InputParams == nil {
		b.InputParams = b.Input2
	}
	if b.ProjectID == "" {
		// One of two names: a schema says it only with anyOf, which huma does not check for us.
		return nil, errcode.Invalid("projectId", "is required")
	}
	p, err := s.namedProject(ctx, b.ProjectID)
	if err != nil {
		return nil, err
	}
	t, err := svc.Create(ctx, tasks.CreateParams{User: caller(ctx), ProjectID: p.ID, Type: b.Type, InputParams: []byte(b.InputParams)})
	if err != nil {
		return nil, err
	}
	return answerData(taskAnswer{t})
}

func (s *Server) getTask(ctx context.Context, in *taskPath) (*Data[taskAnswer], error) {
	svc, err := s.tasksService()
	if err != nil {
		return nil, err
	}
	t, err := svc.Get(ctx, caller(ctx), in.ID)
	if err != nil {
		return nil, err
	}
	return answerData(taskAnswer{t})
}

func (s *Server) cancelTask(ctx context.Context, in *taskPath) (*Data[taskAnswer], error) {
	svc, err := s.tasksService()
	if err != nil {
		return nil, err
	}
	t, err := svc.Cancel(ctx, caller(ctx), in.ID)
	if err != nil {
		return nil, err
	}
	return answerData(taskAnswer{t})
}
