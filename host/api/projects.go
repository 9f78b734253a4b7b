package api

import (
	"context"
	"encoding/json"

	"github.com/danielgtaylor/huma/v2"
	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/access"
	"github.com/reelforge/reelforge/host/scheduler"
	"github.com/reelforge/reelforge/host/store"
)

// projectOperations declares the Projects family (typed: operations.go).
func (s *Server) projectOperations(api huma.API) {
	const tag = "Projects"
	register(api, op{Method: "GET", Path: "/api/projects", Tag: tag, Summary: "List the caller's projects"}, s.listProjects)
	register(api, op{Method: "POST", Path: "/api/projects", Tag: tag, Summary: "Create a project", Status: 201}, s.createProject)
	register(api, op{Method: "GET", Path: "/api/projects/{id}", Tag: tag, Summary: "A project with its tasks",
		Errors: []int{403, 404}}, s.getProject)
	register(api, op{Method: "PUT", Path: "/api/projects/{id}", Tag: tag, Summary: "Update a project",
		Errors: []int{403, 404}}, s.updateProject)
	register(api, op{Method: "DELETE", Path: "/api/projects/{id}", Tag: tag, Summary: "Delete a project (soft)",
		Errors: []int{403, 404}}, s.deleteProject)
	register(api, op{Method: "GET", Path: "/api/projects/{id}/tasks", Tag: tag, Summary: "Tasks of a project",
		Errors: []int{403, 404}}, s.projectTasks)
}

// namedProject is the caller's project id names in a typed operation's body or query (403 when
// there is none or it is not theirs); empty is nil.
func (s *Server) namedProject(ctx context.Context, id string) (*store.Project, error) {
	if id == "" {
		return nil, nil
	}
	return access.Project(ctx, s.Store, caller(ctx), id, access.InBody)
}

// bodyProject loads a project named in a body or query through the ownership guard; empty is nil.
func (s *Server) bodyProject(c *fiber.Ctx, id string) (*store.Project, error) {
	if id == "" {
		return nil, nil
	}
	return access.Project(s.ctx(c), s.Store, principal(c), id, access.InBody)
}

type listProjectsInput struct {
	Paging
	Status string `query:"status" enum:"active,archived" doc:"without it: every project not deleted"`
}

func (s *Server) listProjects(ctx context.Context, in *listProjectsInput) (*List[store.Project], error) {
	items, total, err := s.Store.ListProjects(ctx, store.ListProjectsParams{
		UserID: caller(ctx).UserID, Status: in.Status, Limit: in.Limit, Offset: in.offset()})
	if err != nil {
		return nil, err
	}
	return answerList(items, total, in.Paging)
}

// ProjectFields are the fields a project is created and updated with, but its name (required on
// create only); nil: not given. Exported: huma reads the fields of exported embedded structs only.
type ProjectFields struct {
	Description      *string    `json:"description,omitempty" maxLength:"5000"`
	Status           *string    `json:"status,omitempty" enum:"active,archived"`
	WorkflowPresetID *string    `json:"workflow_preset_id,omitempty" maxLength:"100"`
	Blueprint        jsonObject `json:"blueprint,omitempty" doc:"a 30-day plan: its days become the project's strategy tasks"`
}

type createProjectInput struct {
	Body struct {
		Name string `json:"name" minLength:"1" maxLength:"200"`
		ProjectFields
	}
}

type updateProjectInput struct {
	ID   string    `path:"id"`
	Body *struct { // optional: no body changes nothing
		Name *string `json:"name,omitempty" minLength:"1" maxLength:"200"`
		ProjectFields
	}
}

type projectAnswer struct {
	Project *store.Project `json:"project"`
}

func (s *Server) createProject(ctx context.Context, in *createProjectInput) (*Data[projectAnswer], error) {
	b := in.Body
	p := &store.Project{ID: uuid.NewString(), UserID: caller(ctx).UserID, Name: b.Name, Status: store.ProjectActive,
		Description: deref(b.Description), WorkflowPresetID: deref(b.WorkflowPresetID), Blueprint: b.Blueprint.value()}
	if b.Status != nil {
		p.Status = *b.Status
	}
	err := s.saveProject(ctx, p.ID, p.Blueprint, func(tx Store) error { return tx.CreateProject(ctx, p) })
	if err != nil {
		return nil, err
	}
	return answerData(projectAnswer{p})
}

// saveProject runs save (a create or an update of project id) and, when a blueprint is given,
// makes the project's strategy tasks of it, in one transaction: the project and its tasks commit
// together or not at all, and a second save of the project (a double submit) waits for the
// first's commit on the project row, so the blueprint kept and the tasks scheduled are the same
// save's.
func (s *Server) saveProject(ctx context.Context, id string, blueprint json.RawMessage, save func(tx Store) error) error {
	return store.InTx(ctx, s.Store, func(tx Store) error {
		if err := save(tx); err != nil {
			return err
		}
		if blueprint != nil {
			return scheduler.SyncBlueprint(ctx, tx, id, blueprint)
		}
		return nil
	})
}

type projectPath struct {
	ID string `path:"id"`
}

// project is the caller's project id names in a /api/projects/{id} path (404 when there is
// none, 403 when it is not theirs).
func (s *Server) project(ctx context.Context, id string) (*store.Project, error) {
	return access.Project(ctx, s.Store, caller(ctx), id, access.InPath)
}

type projectTasksAnswer struct {
	Project *store.Project `json:"project"`
	Tasks   []store.Task   `json:"tasks"`
}

func (s *Server) getProject(ctx context.Context, in *projectPath) (*Data[projectTasksAnswer], error) {
	p, err := s.project(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	tasks, err := s.Store.ListProjectTasks(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	return answerData(projectTasksAnswer{p, tasks})
}

func (s *Server) updateProject(ctx context.Context, in *updateProjectInput) (*Data[projectAnswer], error) {
	p, err := s.project(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	up := store.UpdateProjectParams{ID: p.ID}
	if b := in.Body; b != nil {
		up = store.UpdateProjectParams{ID: p.ID, Name: b.Name, Description: b.Description, Status: b.Status,
			WorkflowPresetID: b.WorkflowPresetID, Blueprint: json.RawMessage(b.Blueprint)}
	}
	var got *store.Project
	err = s.saveProject(ctx, p.ID, up.Blueprint, func(tx Store) error {
		var err error
		got, err = tx.UpdateProject(ctx, up)
		return err
	})
	if err != nil {
		return nil, err
	}
	return answerData(projectAnswer{got})
}

type deletedAnswer struct {
	Deleted bool   `json:"deleted"`
	ID      string `json:"id"`
}

func (s *Server) deleteProject(ctx context.Context, in *projectPath) (*Data[deletedAnswer], error) {
	p, err := s.project(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	if err := s.Store.SoftDeleteProject(ctx, p.ID); err != nil {
		return nil, err
	}
	return answerData(deletedAnswer{true, p.ID})
}

type tasksAnswer struct {
	Tasks []store.Task `json:"tasks"`
}

func (s *Server) projectTasks(ctx context.Context, in *projectPath) (*Data[tasksAnswer], error) {
	p, err := s.project(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	tasks, err := s.Store.ListProjectTasks(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	return answerData(tasksAnswer{tasks})
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
