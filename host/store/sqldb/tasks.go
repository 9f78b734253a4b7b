package sqldb

import (
	"context"
	"encoding/json"

	"github.com/reelforge/reelforge/host/store"
)

// TaskCols are the columns scanTask reads, in order.
const TaskCols = `id, project_id, user_id, type, status, input_params, output_data, error_message, retry_count, run_id, created_at, updated_at, completed_at`

// ScanTask reads one row of TaskCols.
func ScanTask(r Row) (*store.Task, error) {
	var t store.Task
	var in, out json.RawMessage
	if err := r.Scan(&t.ID, &t.ProjectID, &t.UserID, &t.Type, &t.Status, JSON(&in), JSON(&out), &t.ErrorMessage,
		&t.RetryCount, &t.RunID, Time(&t.CreatedAt), Time(&t.UpdatedAt), NullTime(&t.CompletedAt)); err != nil {
		return nil, err
	}
	t.InputParams, t.OutputData = in, out
	return &t, nil
}

// ListProjectTasks implements store.Tasks.
func (db *DB) ListProjectTasks(ctx context.Context, projectID string) ([]store.Task, error) {
	rows, err := db.Query(ctx, `SELECT `+TaskCols+` FROM tasks WHERE project_id = $1 ORDER BY created_at DESC, id`, projectID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []store.Task{}
	for rows.Next() {
		t, err := ScanTask(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *t)
	}
	return out, rows.Err()
}
