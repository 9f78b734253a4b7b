package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

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

// prewarmClock times a pass of searches against the store's prewarm (pgstore's background
// prewarm of the server's caches after it starts): when the pass began and when the prewarm
// finished, both from the start of PostgreSQL, so a first pass after a restart says what it met.
type prewarmClock struct {
	pr                 store.PrewarmReporter
	serverStart, first time.Time
}

// newPrewarmClock notes the start of PostgreSQL and of the pass, after waiting for the prewarm
// to finish when wait is set.
func newPrewarmClock(ctx context.Context, st store.Driver, wait bool) *prewarmClock {
	pr, ok := st.(store.PrewarmReporter)
	pg, ok2 := st.(interface{ Pool() *pgxpool.Pool })
	if !ok || !ok2 {
		return nil
	}
	c := &prewarmClock{pr: pr}
	if err := pg.Pool().QueryRow(ctx, `SELECT pg_postmaster_start_time()`).Scan(&c.serverStart); err != nil {
		return nil
	}
	for wait && ctx.Err() == nil {
		// The prewarm for this start of the server, once it settled (or none at all).
		if s := pr.PrewarmStatus(); s.State == "off" || (s.ServerStart.Equal(c.serverStart) && s.State != "running" && s.State != "waiting") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.first = time.Now()
	return c
}

// note describes the prewarm the pass met: what it read where, and when it finished against
// the pass's first search.
func (c *prewarmClock) note() string {
	if c == nil {
		return ""
	}
	p := c.pr.PrewarmStatus()
	since := func(t time.Time) float64 { return t.Sub(c.serverStart).Seconds() }
	out := fmt.Sprintf(" (the first search %.1f s after PostgreSQL started; prewarm %s", since(c.first), p.State)
	if p.Reason != "" {
		out += ": " + p.Reason
	}
	if !p.Started.IsZero() && p.ServerStart.Equal(c.serverStart) {
		out += fmt.Sprintf(", begun at %.1f s", since(p.Started))
		if !p.Finished.IsZero() {
			out += fmt.Sprintf(", finished at %.1f s (%.0f MiB into shared buffers, %.0f MiB into the OS page cache, %.0f MiB left)",
				since(p.Finished), float64(p.BufferBytes)/(1<<20), float64(p.CacheBytes)/(1<<20), float64(p.LeftBytes)/(1<<20))
		}
	}
	return out + ")"
}
