package sqldb

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/reelforge/reelforge/host/store"
)

const projectCols = `id, user_id, name, description, status, workflow_preset_id, blueprint, created_at, updated_at, is_deleted`

func scanProject(r Row) (*store.Project, error) {
	var p store.Project
	var bp json.RawMessage
	if err := r.Scan(&p.ID, &p.UserID, &p.Name, &p.Description, &p.Status, &p.WorkflowPresetID, JSON(&bp),
		Time(&p.CreatedAt), Time(&p.UpdatedAt), &p.IsDeleted); err != nil {
		return nil, err
	}
	p.Blueprint = bp
	return &p, nil
}

// CreateProject implements store.Projects.
func (db *DB) CreateProject(ctx context.Context, p *store.Project) error {
	now := db.Now()
	p.CreatedAt, p.UpdatedAt = now, now
	if p.Status == "" {
		p.Status = store.ProjectActive
	}
	_, err := db.Exec(ctx, `INSERT INTO projects (`+projectCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, FALSE)`,
		p.ID, p.UserID, p.Name, p.Description, p.Status, p.WorkflowPresetID, J(p.Blueprint), db.T(now), db.T(now))
	db.projectsChanged()
	return err
}

// GetProject implements store.Projects.
func (db *DB) GetProject(ctx context.Context, id string) (*store.Project, error) {
	return scanProject(db.QueryRow(ctx, `SELECT `+projectCols+` FROM projects WHERE id = $1`, id))
}

// ListProjects implements store.Projects.
func (db *DB) ListProjects(ctx context.Context, p store.ListProjectsParams) ([]store.Project, int, error) {
	// A transaction may hold its own uncommitted writes: it reads the table, never the cache.
	if db.lists == nil || db.InTransaction() {
		return db.listProjects(ctx, p)
	}
	if items, total, ok := db.lists.get(p); ok {
		return items, total, nil
	}
	gen := db.lists.gen.Load()
	items, total, err := db.listProjects(ctx, p)
	if err == nil {
		db.lists.put(gen, p, items, total)
	}
	return items, total, err
}

func (db *DB) listProjects(ctx context.Context, p store.ListProjectsParams) ([]store.Project, int, error) {
	var a Args
	where := []string{"is_deleted = FALSE"}
	where = a.Eq(where, "user_id", p.UserID)
	where = a.Eq(where, "status", p.Status)
	cond := strings.Join(where, " AND ")
	args := a.List
	// Ask for one row more than the page: when it does not come, the total follows from the page
	// and no COUNT is needed (a window count costs SQLite nearly three times the select).
	// LIMIT and OFFSET are whole numbers written into the SQL: SQLite plans with their values,
	// so a bound LIMIT marks the prepared statement expired on every bind and re-prepares it.
	// Written in, each page size and offset is its own statement, prepared once by the driver.
	rows, err := db.Query(ctx, fmt.Sprintf(`SELECT `+projectCols+` FROM projects WHERE %s
		ORDER BY created_at DESC, id LIMIT %d OFFSET %d`, cond, p.Limit+1, p.Offset), args...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var out []store.Project
	for rows.Next() {
		pr, err := scanProject(rows)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, *pr)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	if len(out) <= p.Limit && (len(out) > 0 || p.Offset == 0) {
		return out, p.Offset + len(out), nil
	}
	if len(out) > p.Limit {
		out = out[:p.Limit]
	}
	var total int
	if err := db.QueryRow(ctx, `SELECT COUNT(*) FROM projects WHERE `+cond, args...).Scan(&total); err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

// UpdateProject implements store.Projects.
func (db *DB) UpdateProject(ctx context.Context, p store.UpdateProjectParams) (*store.Project, error) {
	sets := []string{"updated_at = $2"}
	args := []any{p.ID, db.T(db.Now())}
	add := func(col string, v any) {
		args = append(args, v)
		sets = append(sets, fmt.Sprintf("%s = $%d", col, len(args)))
	}
	if p.Name != nil {
		add("name", *p.Name)
	}
	if p.Description != nil {
		add("description", *p.Description)
	}
	if p.Status != nil {
		add("status", *p.Status)
	}
	if p.WorkflowPresetID != nil {
		add("workflow_preset_id", *p.WorkflowPresetID)
	}
	if p.Blueprint != nil {
		add("blueprint", J(p.Blueprint))
	}
	n, err := db.Exec(ctx, `UPDATE projects SET `+strings.Join(sets, ", ")+` WHERE id = $1 AND is_deleted = FALSE`, args...)
	db.projectsChanged()
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, store.ErrNotFound
	}
	return db.GetProject(ctx, p.ID)
}

// SoftDeleteProject implements store.Projects.
func (db *DB) SoftDeleteProject(ctx context.Context, id string) error {
	n, err := db.Exec(ctx, `UPDATE projects SET is_deleted = TRUE, updated_at = $2 WHERE id = $1 AND is_deleted = FALSE`, id, db.T(db.Now()))
	db.projectsChanged()
	if err == nil && n == 0 {
		return store.ErrNotFound
	}
	return err
}
