package sqldb

import (
	"context"
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
