package store

import (
	"context"
	"encoding/json"
	"time"
)

// Project statuses.
const (
	ProjectActive   = "active"
	ProjectArchived = "archived"
)

// Project is a user's content project. It is also the API's answer: its tags say how it is
// written (json) and documented in /api/openapi.json (format, enum, doc: huma, host/api).
type Project struct {
	ID               string          `json:"id" format:"uuid"`
	UserID           string          `json:"user_id" format:"uuid"`
	Name             string          `json:"name"`
	Description      string          `json:"description"`
	Status           string          `json:"status" enum:"active,archived,deleted"`
	WorkflowPresetID string          `json:"workflow_preset_id"`
	Blueprint        json.RawMessage `json:"blueprint" doc:"a 30-day plan, or null"`
	CreatedAt        time.Time       `json:"created_at"`
	UpdatedAt        time.Time       `json:"updated_at"`
	IsDeleted        bool            `json:"is_deleted"`
}

// ListProjectsParams filters and pages a user's projects. Deleted projects are never listed.
type ListProjectsParams struct {
	UserID string // empty: every user's (admin)
	Status string // empty: every status
	Limit  int
	Offset int
}

// UpdateProjectParams holds the fields to change; nil means unchanged.
type UpdateProjectParams struct {
	ID               string
	Name             *string
	Description      *string
	Status           *string
	WorkflowPresetID *string
	Blueprint        json.RawMessage // nil: unchanged
}

// Projects stores projects.
type Projects interface {
	CreateProject(ctx context.Context, p *Project) error
	// GetProject returns the project even when soft-deleted (callers check IsDeleted).
	GetProject(ctx context.Context, id string) (*Project, error)
	ListProjects(ctx context.Context, p ListProjectsParams) ([]Project, int, error)
	UpdateProject(ctx context.Context, p UpdateProjectParams) (*Project, error)
	SoftDeleteProject(ctx context.Context, id string) error
}
