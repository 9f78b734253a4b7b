// Package access is the one ownership guard: every route that names a project calls Project.
package access

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/auth"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// ForbiddenProject is the exact message of a refused project (SPEC.md Errors 2).
const ForbiddenProject = "Forbidden: project not accessible"

// Where says how the project id reached the request: a missing project named in a
// /api/projects/:id path is 404; one named in a body or query is 403 like another user's.
type Where int

// Where a project id came from.
const (
	InPath Where = iota
	InBody
)

// Getter loads projects.
type Getter interface {
	GetProject(ctx context.Context, id string) (*store.Project, error)
}

// Forbidden returns the 403 error of an inaccessible project.
func Forbidden() *errcode.Error { return errcode.New(errcode.Authorization, ForbiddenProject) }

// Project returns the project when p may use it: it exists, is not deleted, and p owns it, is an
// admin or is the automation tool (an automation key, which reaches only the scheduler routes). Otherwise the error is 403 Forbidden (or 404 for a missing project InPath).
func Project(ctx context.Context, st Getter, p *auth.Principal, id string, where Where) (*store.Project, error) {
	if p == nil {
		return nil, errcode.New(errcode.Authentication, "")
	}
	if where == InBody && !isUUID(id) {
		// Not an id at all: malformed input, refused as the OpenAPI document's format uuid refuses it
		// (a well-formed id naming no project stays a 403, DECISIONS.md).
		return nil, errcode.Invalid("project_id", "must be a UUID")
	}
	proj, err := st.GetProject(ctx, id)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			if where == InPath {
				return nil, errcode.New(errcode.NotFound, "Project not found")
			}
			return nil, Forbidden()
		}
		return nil, fmt.Errorf("access: load project: %w", err)
	}
	if proj.IsDeleted || (proj.UserID != p.UserID && !p.ActsForAll()) {
		return nil, Forbidden()
	}
	return proj, nil
}

// isUUID reports whether s is a UUID in its canonical 36-character form (the form of every id the
// host makes); uuid.Parse alone also takes the 32-digit, braced and urn:uuid: forms.
func isUUID(s string) bool {
	return len(s) == 36 && uuid.Validate(s) == nil
}
