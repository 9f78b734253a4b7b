package sqldb

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/reelforge/reelforge/host/store"
)

// TaskCols are the columns ScanTask reads, in order.
const TaskCols = `id, project_id, user_id, type, status, input_params, output_data, error_message, retry_count, max_retries, run_id, next_attempt_at, created_at, updated_at, completed_at`

// ScanTask reads one row of TaskCols.
func ScanTask(r Row) (*store.Task, error) {
	var t store.Task
	var in, out json.RawMessage
	if err := r.Scan(&t.ID, &t.ProjectID, &t.UserID, &t.Type, &t.Status, JSON(&in), JSON(&out), &t.ErrorMessage,
		&t.RetryCount, &t.MaxRetries, &t.RunID, NullTime(&t.NextAttemptAt), Time(&t.CreatedAt), Time(&t.UpdatedAt),
		NullTime(&t.CompletedAt)); err != nil {
		return nil, err
	}
	t.InputParams, t.OutputData = in, out
	return &t, nil
}

func (db *DB) scanTasks(ctx context.Context, q string, args ...any) ([]store.Task, error) {
	return queryAll(ctx, db, ScanTask, q, args...)
}

// ListProjectTasks implements store.Tasks.
func (db *DB) ListProjectTasks(ctx context.Context, projectID string) ([]store.Task, error) {
	return db.scanTasks(ctx, `SELECT `+TaskCols+` FROM tasks WHERE project_id = $1 ORDER BY created_at DESC, id`, projectID)
}

// CreateTask implements store.Tasks.
func (db *DB) CreateTask(ctx context.Context, t *store.Task) error {
	now := db.Now()
	t.CreatedAt, t.UpdatedAt = now, now
	if t.Status == "" {
		t.Status = store.TaskPending
	}
	if t.MaxRetries == 0 {
		t.MaxRetries = 3
	}
	if len(t.InputParams) == 0 {
		t.InputParams = json.RawMessage("{}")
	}
	_, err := db.Exec(ctx, `INSERT INTO tasks (`+TaskCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
		t.ID, t.ProjectID, t.UserID, t.Type, t.Status, J(t.InputParams), J(t.OutputData), t.ErrorMessage, t.RetryCount,
		t.MaxRetries, t.RunID, db.TP(t.NextAttemptAt), db.T(now), db.T(now), db.TP(t.CompletedAt))
	return err
}

// GetTask implements store.Tasks.
func (db *DB) GetTask(ctx context.Context, id string) (*store.Task, error) {
	return ScanTask(db.QueryRow(ctx, `SELECT `+TaskCols+` FROM tasks WHERE id = $1`, id))
}

// UpdateTask implements store.Tasks.
func (db *DB) UpdateTask(ctx context.Context, u store.TaskUpdate) (*store.Task, error) {
	if len(u.From) == 0 || u.To == "" {
		return nil, fmt.Errorf("store: UpdateTask needs From and To")
	}
	var got *store.Task
	err := db.WithTx(ctx, func(tx *DB) error {
		now := tx.Now()
		args := []any{u.ID, u.To, tx.T(now)}
		sets := []string{"status = $2", "updated_at = $3"}
		add := func(expr string, v any) {
			args = append(args, v)
			sets = append(sets, fmt.Sprintf(expr, len(args)))
		}
		if u.RunID != nil {
			add("run_id = $%d", *u.RunID)
		}
		if u.OutputData != nil {
			add("output_data = $%d", J(u.OutputData))
		}
		if u.ErrorMessage != nil {
			add("error_message = $%d", *u.ErrorMessage)
		}
		if u.IncRetry {
			sets = append(sets, "retry_count = retry_count + 1")
		}
		add("next_attempt_at = $%d", tx.TP(u.NextAttemptAt))
		if u.Completed {
			add("completed_at = $%d", tx.T(now))
		}
		in := make([]string, len(u.From))
		for i, f := range u.From {
			args = append(args, f)
			in[i] = fmt.Sprintf("$%d", len(args))
		}
		n, err := tx.Exec(ctx, `UPDATE tasks SET `+strings.Join(sets, ", ")+` WHERE id = $1 AND status IN (`+strings.Join(in, ", ")+`)`, args...)
		if err != nil {
			return err
		}
		if n == 0 {
			if _, err := tx.GetTask(ctx, u.ID); err != nil {
				return err
			}
			return store.ErrStale
		}
		for i := range u.Assets {
			if err := tx.insertAsset(ctx, &u.Assets[i]); err != nil {
				return err
			}
		}
		got, err = tx.GetTask(ctx, u.ID)
		return err
	})
	return got, err
}

func (db *DB) insertAsset(ctx context.Context, a *store.Asset) error { return db.CreateAsset(ctx, a) }

// ListTaskAssets implements store.Tasks.
func (db *DB) ListTaskAssets(ctx context.Context, taskID string) ([]store.Asset, error) {
	return queryAll(ctx, db, func(r Row) (*store.Asset, error) {
		var a store.Asset
		return &a, r.Scan(&a.ID, &a.UserID, &a.ProjectID, &a.FilePath, &a.FileType, &a.MimeType, &a.FileSize, &a.FileURL,
			&a.OriginalName, JSON(&a.Metadata), &a.SourceTaskID, Time(&a.CreatedAt))
	}, `SELECT id, user_id, project_id, file_path, file_type, mime_type, file_size, file_url,
		original_name, metadata, source_task_id, created_at FROM assets WHERE source_task_id = $1 AND is_deleted = FALSE
		ORDER BY created_at, id`, taskID)
}

// ClaimTasks implements store.Tasks. The claim is one UPDATE whose WHERE repeats the whole
// condition, so a task moves only if it still qualifies when its row is written: between a
// separate SELECT and UPDATE another host could take an orphan back and dispatch it again (fresh,
// its run not yet recorded, and taken back a second time here: two runs), or dispatch a queued task
// and send it back with a back-off (dispatched here before the back-off is over). PostgreSQL skips
// rows other hosts are claiming (FOR UPDATE SKIP LOCKED); SQLite serialises writers.
func (db *DB) ClaimTasks(ctx context.Context, p store.ClaimTasksParams) ([]store.Task, error) {
	if p.Limit <= 0 {
		p.Limit = 10
	}
	args := []any{p.From, p.To, db.T(db.Now()), p.Limit}
	cond := `status = $1 AND (next_attempt_at IS NULL OR next_attempt_at <= $3)`
	if !p.StaleBefore.IsZero() {
		// An orphan: moved by a host that died before starting its run.
		args = append(args, db.T(p.StaleBefore))
		cond = `status = $1 AND run_id = '' AND updated_at < $5`
	}
	lock := db.rowLock(lockSkipLocked)
	out, err := db.scanTasks(ctx, `UPDATE tasks SET status = $2, updated_at = $3, next_attempt_at = NULL
		WHERE id IN (SELECT id FROM tasks WHERE `+cond+` ORDER BY created_at, id LIMIT $4`+lock+`)
		AND `+cond+` RETURNING `+TaskCols, args...)
	if err != nil {
		return nil, err
	}
	// RETURNING has no order: hand them out oldest first, as they were picked.
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}
