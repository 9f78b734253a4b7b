package sqldb

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/reelforge/reelforge/host/store"
)

// CountOps implements the counting half of store.Stats.
func (db *DB) CountOps(ctx context.Context) (*store.OpsCounts, error) {
	out := &store.OpsCounts{}
	for _, q := range []struct {
		dst *[]store.StateCount
		sql string
	}{
		{&out.Runs, `SELECT engine, status, COUNT(*) FROM runs GROUP BY engine, status`},
		{&out.Jobs, `SELECT type, status, COUNT(*) FROM jobs GROUP BY type, status`},
		{&out.Outbox, `SELECT '', CASE WHEN status = 'pending' AND attempts > 0 THEN 'failed' ELSE status END AS st, COUNT(*)
			FROM outbox GROUP BY st`},
	} {
		rows, err := db.Query(ctx, q.sql)
		if err != nil {
			return nil, fmt.Errorf("store: count ops: %w", err)
		}
		for rows.Next() {
			var c store.StateCount
			var n int64
			if err := rows.Scan(&c.Kind, &c.State, &n); err != nil {
				rows.Close()
				return nil, fmt.Errorf("store: count ops: %w", err)
			}
			c.N = int(n)
			*q.dst = append(*q.dst, c)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("store: count ops: %w", err)
		}
	}
	return out, nil
}

// RecentQueryLatencies implements store.Stats.
func (db *DB) RecentQueryLatencies(ctx context.Context, mode string, n int) ([]float64, error) {
	rows, err := db.Query(ctx, `SELECT latency_ms FROM knowledge_queries WHERE mode = $1 ORDER BY created_at DESC LIMIT $2`, mode, n)
	if err != nil {
		return nil, fmt.Errorf("store: query latencies: %w", err)
	}
	defer rows.Close()
	out := []float64{}
	for rows.Next() {
		var v float64
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("store: query latencies: %w", err)
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// SourceFileHashes returns the parse status of every document of the knowledge source (createdBy,
// projectID, name) by its file hash; an unknown source holds none. `reelforge kb ingest` uses it
// to skip files a source holds already.
func (db *DB) SourceFileHashes(ctx context.Context, createdBy, projectID, name string) (map[string]string, error) {
	rows, err := db.Query(ctx, `SELECT d.file_hash, d.parse_status FROM knowledge_documents d
		JOIN knowledge_sources s ON s.id = d.source_id
		WHERE s.created_by = $1 AND s.project_id = $2 AND s.name = $3`, createdBy, projectID, name)
	if err != nil {
		return nil, fmt.Errorf("store: source hashes: %w", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var h, st string
		if err := rows.Scan(&h, &st); err != nil {
			return nil, fmt.Errorf("store: source hashes: %w", err)
		}
		out[h] = st
	}
	return out, rows.Err()
}

// WorkflowSamples reads the runs created in the window, their jobs and their trace steps.
func (db *DB) WorkflowSamples(ctx context.Context, p store.WorkflowSampleParams) (*store.WorkflowSamples, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 100_000
	}
	where := `r.created_at >= $1 AND r.created_at < $2`
	args := []any{db.T(p.Since), db.T(p.Until), limit}
	if p.UserID != "" {
		where += ` AND r.user_id = $4`
		args = append(args, p.UserID)
	}
	out := &store.WorkflowSamples{}
	rows, err := db.Query(ctx, `SELECT r.workflow_id, r.engine, r.degraded, r.status, r.created_at, r.started_at, r.completed_at
		FROM runs r WHERE `+where+` ORDER BY r.created_at LIMIT $3`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: workflow samples: %w", err)
	}
	for rows.Next() {
		var s store.RunSample
		if err := rows.Scan(&s.WorkflowID, &s.Engine, &s.Degraded, &s.Status, Time(&s.CreatedAt), NullTime(&s.StartedAt), NullTime(&s.CompletedAt)); err != nil {
			rows.Close()
			return nil, fmt.Errorf("store: workflow samples: %w", err)
		}
		out.Runs = append(out.Runs, s)
	}
	if err := closeRows(rows); err != nil {
		return nil, err
	}
	rows, err = db.Query(ctx, `SELECT j.type, j.status, j.created_at, j.dispatched_at, j.external_completed_at, j.resolved_at
		FROM jobs j JOIN runs r ON r.run_id = j.run_id WHERE `+where+` ORDER BY j.created_at LIMIT $3`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: workflow samples: %w", err)
	}
	for rows.Next() {
		var s store.JobSample
		if err := rows.Scan(&s.Type, &s.Status, Time(&s.CreatedAt), NullTime(&s.DispatchedAt), NullTime(&s.ExternalCompletedAt), NullTime(&s.ResolvedAt)); err != nil {
			rows.Close()
			return nil, fmt.Errorf("store: workflow samples: %w", err)
		}
		out.Jobs = append(out.Jobs, s)
	}
	if err := closeRows(rows); err != nil {
		return nil, err
	}
	rows, err = db.Query(ctx, `SELECT t.status, t.step FROM trace_steps t JOIN runs r ON r.run_id = t.run_id
		WHERE `+where+` ORDER BY t.run_id, t.seq LIMIT $3`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: workflow samples: %w", err)
	}
	for rows.Next() {
		var s store.StepSample
		var raw json.RawMessage
		if err := rows.Scan(&s.Status, JSON(&raw)); err != nil {
			rows.Close()
			return nil, fmt.Errorf("store: workflow samples: %w", err)
		}
		var step struct {
			Agent string `json:"agent"`
		}
		if err := json.Unmarshal(raw, &step); err != nil {
			step.Agent = "(unreadable step)"
		}
		s.Agent = step.Agent
		out.Steps = append(out.Steps, s)
	}
	return out, closeRows(rows)
}

func closeRows(rows Rows) error {
	err := rows.Err()
	rows.Close()
	if err != nil {
		return fmt.Errorf("store: workflow samples: %w", err)
	}
	return nil
}
