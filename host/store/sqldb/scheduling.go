package sqldb

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/reelforge/reelforge/host/store"
)

const strategyCols = `st.task_id, st.project_id, st.workflow_id, st.summary, st.platform, st.inputs, st.due_date, st.priority, st.created_at`

// ReplaceStrategyTasks implements store.Scheduling.
func (db *DB) ReplaceStrategyTasks(ctx context.Context, projectID string, tasks []store.StrategyTask) error {
	return db.WithTx(ctx, func(tx *DB) error {
		// Replaces of one project's tasks take turns (SQLite's single writer does so already): on
		// PostgreSQL the project row stays locked to the end of the transaction. Without it, a
		// second replace's DELETE waits for the first, then cannot see the first's new rows:
		// both blueprints' tasks were left (the old ones still auto-run), or, with the same ids,
		// the second failed on the key. NO KEY UPDATE, the lock an UPDATE of the project takes
		// (so a blueprint saved with UpdateProject in the same transaction holds it already),
		// leaves other tables' inserts referencing the project free to go on.
		lock := tx.rowLock(lockNoKeyUpdate)
		var id string
		if err := tx.QueryRow(ctx, `SELECT id FROM projects WHERE id = $1`+lock, projectID).Scan(&id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM strategy_tasks WHERE project_id = $1`, projectID); err != nil {
			return err
		}
		now := tx.Now()
		for i := range tasks {
			t := &tasks[i]
			t.ProjectID, t.CreatedAt = projectID, now
			if t.Priority == "" {
				t.Priority = store.PriorityMedium
			}
			if _, err := tx.Exec(ctx, `INSERT INTO strategy_tasks (id, task_id, project_id, workflow_id, summary, platform,
				inputs, due_date, priority, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
				projectID+":"+t.TaskID, t.TaskID, projectID, t.WorkflowID, t.Summary, t.Platform, J(t.Inputs), t.DueDate,
				t.Priority, tx.T(now)); err != nil {
				return fmt.Errorf("store: strategy task %q: %w", t.TaskID, err)
			}
		}
		return nil
	})
}

func scanStrategy(r Row, extra ...any) (*store.StrategyTask, error) {
	var t store.StrategyTask
	dest := append([]any{&t.TaskID, &t.ProjectID, &t.WorkflowID, &t.Summary, &t.Platform, JSON(&t.Inputs), &t.DueDate,
		&t.Priority, Time(&t.CreatedAt)}, extra...)
	if err := r.Scan(dest...); err != nil {
		return nil, err
	}
	return &t, nil
}

// ListStrategyTasks implements store.Scheduling.
func (db *DB) ListStrategyTasks(ctx context.Context, projectID string) ([]store.StrategyTask, error) {
	return queryAll(ctx, db, func(r Row) (*store.StrategyTask, error) { return scanStrategy(r) },
		`SELECT `+strategyCols+` FROM strategy_tasks st WHERE st.project_id = $1 ORDER BY st.due_date, st.task_id`, projectID)
}

// ListDueStrategyTasks implements store.Scheduling.
func (db *DB) ListDueStrategyTasks(ctx context.Context, p store.DueStrategyTasksParams) ([]store.StrategyTask, error) {
	if p.Limit <= 0 {
		p.Limit = 10
	}
	args := []any{p.Today, p.Limit}
	owner := ""
	if p.UserID != "" {
		args = append(args, p.UserID)
		owner = fmt.Sprintf(" AND p.user_id = $%d", len(args))
	}
	if len(p.ProjectIDs) > 0 {
		in := make([]string, len(p.ProjectIDs))
		for i, id := range p.ProjectIDs {
			args = append(args, id)
			in[i] = fmt.Sprintf("$%d", len(args))
		}
		owner += " AND st.project_id IN (" + strings.Join(in, ", ") + ")"
	}
	return queryAll(ctx, db, func(r Row) (*store.StrategyTask, error) {
		var name, user string
		var running int
		t, err := scanStrategy(r, &name, &user, &running)
		if err != nil {
			return nil, err
		}
		t.ProjectName, t.UserID, t.RunningRuns = name, user, running
		return t, nil
	}, `SELECT `+strategyCols+`, p.name, p.user_id,
		(SELECT COUNT(*) FROM project_auto_runs r WHERE r.project_id = st.project_id AND r.status = 'running')
		FROM strategy_tasks st JOIN projects p ON p.id = st.project_id
		WHERE st.due_date <= $1 AND p.is_deleted = FALSE AND p.status = 'active'`+owner+`
		AND NOT EXISTS (SELECT 1 FROM project_auto_runs a WHERE a.project_id = st.project_id
			AND a.strategy_task_id = st.task_id AND a.status IN ('running', 'completed'))
		ORDER BY CASE st.priority WHEN 'high' THEN 0 WHEN 'medium' THEN 1 ELSE 2 END, st.due_date, st.project_id, st.task_id
		LIMIT $2`, args...)
}

// StartAutoRun implements store.Scheduling. The one conditional statement decides: a new mark,
// or one whose run failed, becomes running; a running or completed one stays as it is (the due
// list leaves both out, and a trigger acting on an older list must not run the task again).
func (db *DB) StartAutoRun(ctx context.Context, a *store.AutoRun) error {
	a.Status, a.RunID, a.StartedAt, a.CompletedAt, a.Trace = store.AutoRunRunning, "", db.Now(), nil, nil
	n, err := db.Exec(ctx, `INSERT INTO project_auto_runs (project_id, strategy_task_id, run_id, workflow_id, status, trace,
		started_at, completed_at) VALUES ($1, $2, '', $3, 'running', NULL, $4, NULL)
		ON CONFLICT (project_id, strategy_task_id) DO UPDATE SET run_id = '', workflow_id = excluded.workflow_id,
			status = 'running', trace = NULL, started_at = excluded.started_at, completed_at = NULL
		WHERE project_auto_runs.status = 'failed'`, a.ProjectID, a.StrategyTaskID, a.WorkflowID, db.T(a.StartedAt))
	if err != nil {
		return err
	}
	if n == 0 {
		return store.ErrConflict
	}
	return nil
}

// SetAutoRunRun implements store.Scheduling.
func (db *DB) SetAutoRunRun(ctx context.Context, p store.AutoRunRunParams) error {
	n, err := db.Exec(ctx, `UPDATE project_auto_runs SET run_id = $3 WHERE project_id = $1 AND strategy_task_id = $2 AND run_id = ''`,
		p.ProjectID, p.StrategyTaskID, p.RunID)
	if err == nil && n == 0 {
		return store.ErrStale
	}
	return err
}

// FinishAutoRun implements store.Scheduling.
func (db *DB) FinishAutoRun(ctx context.Context, p store.FinishAutoRunParams) error {
	n, err := db.Exec(ctx, `UPDATE project_auto_runs SET status = $4, trace = $5, completed_at = $6, run_id = $3
		WHERE project_id = $1 AND strategy_task_id = $2 AND status = 'running' AND (run_id = $3 OR run_id = '')`,
		p.ProjectID, p.StrategyTaskID, p.RunID, p.Status, J(p.Trace), db.T(db.Now()))
	if err == nil && n == 0 {
		return store.ErrStale
	}
	return err
}

// GetAutoRun implements store.Scheduling.
func (db *DB) GetAutoRun(ctx context.Context, projectID, strategyTaskID string) (*store.AutoRun, error) {
	var a store.AutoRun
	err := db.QueryRow(ctx, `SELECT project_id, strategy_task_id, run_id, workflow_id, status, trace, started_at, completed_at
		FROM project_auto_runs WHERE project_id = $1 AND strategy_task_id = $2`, projectID, strategyTaskID).Scan(
		&a.ProjectID, &a.StrategyTaskID, &a.RunID, &a.WorkflowID, &a.Status, JSON(&a.Trace), Time(&a.StartedAt), NullTime(&a.CompletedAt))
	if err != nil {
		return nil, err
	}
	return &a, nil
}

// SetSchedulerMark implements store.Scheduling.
func (db *DB) SetSchedulerMark(ctx context.Context, name string, at time.Time) error {
	_, err := db.Exec(ctx, `INSERT INTO scheduler_marks (name, at) VALUES ($1, $2)
		ON CONFLICT (name) DO UPDATE SET at = excluded.at`, name, db.T(at))
	return err
}

// SchedulerMark implements store.Scheduling (ErrNotFound when never set).
func (db *DB) SchedulerMark(ctx context.Context, name string) (time.Time, error) {
	var at time.Time
	err := db.QueryRow(ctx, `SELECT at FROM scheduler_marks WHERE name = $1`, name).Scan(Time(&at))
	return at, err
}
