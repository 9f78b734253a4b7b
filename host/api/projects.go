package api

import (
	"encoding/json"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/access"
	"github.com/reelforge/reelforge/host/scheduler"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/sdk/errcode"
)

func (s *Server) projectRoutes(r fiber.Router) {
	r.Get("/projects", s.listProjects)
	r.Post("/projects", s.createProject)
	r.Get("/projects/:id", s.getProject)
	r.Put("/projects/:id", s.updateProject)
	r.Delete("/projects/:id", s.deleteProject)
	r.Get("/projects/:id/tasks", s.projectTasks)
}

// Field sizes of a project.
const (
	maxNameLen        = 200
	maxDescriptionLen = 5000
)

// pathProject loads the project named by the :id path parameter through the ownership guard.
func (s *Server) pathProject(c *fiber.Ctx) (*store.Project, error) {
	return access.Project(s.ctx(c), s.Store, principal(c), c.Params("id"), access.InPath)
}

// bodyProject loads a project named in a body or query through the ownership guard; empty is nil.
func (s *Server) bodyProject(c *fiber.Ctx, id string) (*store.Project, error) {
	if id == "" {
		return nil, nil
	}
	return access.Project(s.ctx(c), s.Store, principal(c), id, access.InBody)
}

func (s *Server) listProjects(c *fiber.Ctx) error {
	page, limit, offset, err := paging(c)
	if err != nil {
		return err
	}
	status := c.Query("status")
	if status != "" && status != store.ProjectActive && status != store.ProjectArchived {
		return errcode.Invalid("status", "must be active or archived")
	}
	items, total, err := s.Store.ListProjects(s.ctx(c), store.ListProjectsParams{
		UserID: principal(c).UserID, Status: status, Limit: limit, Offset: offset})
	if err != nil {
		return err
	}
	if items == nil {
		items = []store.Project{} // an empty page is [], not null
	}
	return listing(c, items, total, page, limit)
}

type projectInput struct {
	Name             *string         `json:"name"`
	Description      *string         `json:"description"`
	Status           *string         `json:"status"`
	WorkflowPresetID *string         `json:"workflow_preset_id"`
	Blueprint        json.RawMessage `json:"blueprint"`
}

func (in *projectInput) validate(create bool) error {
	if create || in.Name != nil {
		name := ""
		if in.Name != nil {
			name = *in.Name
		}
		if err := fieldLen("name", name, true, maxNameLen); err != nil {
			return err
		}
	}
	if in.Description != nil {
		if err := fieldLen("description", *in.Description, false, maxDescriptionLen); err != nil {
			return err
		}
	}
	if in.Status != nil && *in.Status != store.ProjectActive && *in.Status != store.ProjectArchived {
		return errcode.Invalid("status", "must be active or archived")
	}
	if in.WorkflowPresetID != nil {
		if err := fieldLen("workflow_preset_id", *in.WorkflowPresetID, false, 100); err != nil {
			return err
		}
	}
	if len(in.Blueprint) > 0 && string(in.Blueprint) != "null" && in.Blueprint[0] != '{' {
		return errcode.Invalid("blueprint", "must be an object")
	}
	return nil
}

func (s *Server) createProject(c *fiber.Ctx) error {
	var in projectInput
	if err := decode(c, &in); err != nil {
		return err
	}
	if err := in.validate(true); err != nil {
		return err
	}
	p := &store.Project{ID: uuid.NewString(), UserID: principal(c).UserID, Name: *in.Name, Status: store.ProjectActive}
	if in.Description != nil {
		p.Description = *in.Description
	}
	if in.Status != nil {
		p.Status = *in.Status
	}
	if in.WorkflowPresetID != nil {
		p.WorkflowPresetID = *in.WorkflowPresetID
	}
	if len(in.Blueprint) > 0 && string(in.Blueprint) != "null" {
		p.Blueprint = in.Blueprint
	}
	err := s.saveProject(c, p.ID, p.Blueprint, func(tx Store) error { return tx.CreateProject(s.ctx(c), p) })
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusCreated, fiber.Map{"project": p})
}

// saveProject runs save (a create or an update of project id) and, when a blueprint is given,
// makes the project's strategy tasks of it, in one transaction: the project and its tasks commit
// together or not at all, and a second save of the project (a double submit) waits for the
// first's commit on the project row, so the blueprint kept and the tasks scheduled are the same
// save's.
func (s *Server) saveProject(c *fiber.Ctx, id string, blueprint json.RawMessage, save func(tx Store) error) error {
	return store.InTx(s.ctx(c), s.Store, func(tx Store) error {
		if err := save(tx); err != nil {
			return err
		}
		if blueprint != nil {
			return scheduler.SyncBlueprint(s.ctx(c), tx, id, blueprint)
		}
		return nil
	})
}

// pathProjectTasks is the project the path names, with its strategy tasks.
func (s *Server) pathProjectTasks(c *fiber.Ctx) (*store.Project, []store.Task, error) {
	p, err := s.pathProject(c)
	if err != nil {
		return nil, nil, err
	}
	tasks, err := s.Store.ListProjectTasks(s.ctx(c), p.ID)
	return p, tasks, err
}

func (s *Server) getProject(c *fiber.Ctx) error {
	p, tasks, err := s.pathProjectTasks(c)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, fiber.Map{"project": p, "tasks": tasks})
}

func (s *Server) updateProject(c *fiber.Ctx) error {
	p, err := s.pathProject(c)
	if err != nil {
		return err
	}
	var in projectInput
	if err := decode(c, &in); err != nil {
		return err
	}
	if err := in.validate(false); err != nil {
		return err
	}
	up := store.UpdateProjectParams{ID: p.ID, Name: in.Name, Description: in.Description, Status: in.Status,
		WorkflowPresetID: in.WorkflowPresetID}
	if len(in.Blueprint) > 0 {
		up.Blueprint = in.Blueprint
	}
	var got *store.Project
	err = s.saveProject(c, p.ID, up.Blueprint, func(tx Store) error {
		var err error
		got, err = tx.UpdateProject(s.ctx(c), up)
		return err
	})
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, fiber.Map{"project": got})
}

func (s *Server) deleteProject(c *fiber.Ctx) error {
	p, err := s.pathProject(c)
	if err != nil {
		return err
	}
	if err := s.Store.SoftDeleteProject(s.ctx(c), p.ID); err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, fiber.Map{"deleted": true, "id": p.ID})
}

func (s *Server) projectTasks(c *fiber.Ctx) error {
	_, tasks, err := s.pathProjectTasks(c)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, fiber.Map{"tasks": tasks})
}
