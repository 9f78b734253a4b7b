package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reelforge/reelforge/host/store"
)

// The knowledge bench's figures of scale on PostgreSQL (-kb-bulk-from, -kb-build-mem): what the
// corpus and its indexes take on disk, and the settings the index build ran with.

// withRuntimeParam adds a session setting to a PostgreSQL connection string (pgx passes a
// parameter it does not know to the server as a run-time setting, in a URL or key=value form).
func withRuntimeParam(conn, key, value string) string {
	if u, err := url.Parse(conn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		q := u.Query()
		q.Set(key, value)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return conn + " " + key + "=" + value
}

// kbRelationSizes describes the knowledge tables' sizes on disk: each table alone and with its
// TOAST and indexes, the HNSW index and the keyword leg's GIN index.
func kbRelationSizes(ctx context.Context, st store.Driver) (string, error) {
	pg, ok := st.(interface{ Pool() *pgxpool.Pool })
	vr, ok2 := st.(store.VectorIndexReporter)
	if !ok || !ok2 {
		return "", nil
	}
	vs, err := vr.VectorIndexStatus(ctx)
	if err != nil {
		return "", err
	}
	var chunks, chunksAll, embs, embsAll, gin int64
	if err := pg.Pool().QueryRow(ctx, `SELECT pg_relation_size('knowledge_chunks'), pg_total_relation_size('knowledge_chunks'),
		pg_relation_size('knowledge_embeddings'), pg_total_relation_size('knowledge_embeddings'),
		COALESCE(pg_relation_size(to_regclass('knowledge_chunks_tsv')), 0)`).Scan(&chunks, &chunksAll, &embs, &embsAll, &gin); err != nil {
		return "", fmt.Errorf("relation sizes: %w", err)
	}
	mb := func(b int64) float64 { return float64(b) / (1 << 20) }
	return fmt.Sprintf(" (on disk: knowledge_chunks %.0f MiB, %.0f MiB with its TOAST and indexes, of which the GIN index %.0f MiB; "+
		"knowledge_embeddings %.0f MiB, %.0f MiB with its indexes, of which the HNSW index %.0f MiB; shared_buffers %.0f MiB)",
		mb(chunks), mb(chunksAll), mb(gin), mb(embs), mb(embsAll), mb(vs.IndexBytes), mb(vs.SharedBufferBytes)), nil
}

// buildMemNote names the settings an index build of st's connections runs with.
func buildMemNote(ctx context.Context, st store.Driver) string {
	pg, ok := st.(interface{ Pool() *pgxpool.Pool })
	if !ok {
		return ""
	}
	var mem, workers string
	if err := pg.Pool().QueryRow(ctx, `SELECT current_setting('maintenance_work_mem'), current_setting('max_parallel_maintenance_workers')`).Scan(&mem, &workers); err != nil {
		return ""
	}
	return fmt.Sprintf(", maintenance_work_mem %s, max_parallel_maintenance_workers %s", mem, workers)
}

// loadAverage is the machine's load average over the last minute (/proc/loadavg), to print beside
// a wall-time figure measured on a shared machine; "?" where it cannot be read.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}
