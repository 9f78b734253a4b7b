package pgstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reelforge/reelforge/host/store"
)

// The prewarmer. After PostgreSQL starts, its buffer cache is empty (and after the machine
// starts, the OS page cache too), so the first searches read from disk every page they touch: at
// 100k chunks the first pass of 300 searches after a restart read 1.1 to 1.4 GB from the disk,
// a page at a time, and its p95 was three times a warm pass's (target: the first pass
// after a restart at most 60 ms, BENCHMARKS.md). The prewarmer reads the relations searches use
// back with pg_prewarm, each in one sequential pass (two at a time, on connections of its own),
// in the background: when the driver opens and whenever it finds that the server
// started again since (pg_postmaster_start_time changed: it looks every prewarmPoll, and when the
// pool opens a connection, as it does after a restart). Searches never wait for it; one that
// comes meanwhile finds the relations read so far.
//
// What goes where: the relations of prewarmRelations, in their order, into shared buffers while
// they fit in prewarmBufferShare of shared_buffers (the rest stays for the server's other work),
// the next ones into the OS page cache ('read' mode) while they fit in effective_cache_size less
// shared_buffers (the operator's own statement of what that cache holds for PostgreSQL), and a
// relation that fits in neither is left to the searches (PrewarmStatus.LeftBytes).
//
// pg_prewarm is in PostgreSQL's contrib, but only a superuser can create it: the prewarmer
// creates it (in public, as pgvector) when its role may, and otherwise uses it when an
// administrator created it in the database. Without it the prewarmer reads nothing and says why in
// PrewarmStatus (/health); searches work as before, only slower on a cold cache. The server's own
// autoprewarm (shared_preload_libraries = 'pg_prewarm', README) restores the buffers it held
// before a restart without any host; the two go together (what autoprewarm loaded, the prewarmer
// finds in the buffers).
//
// Hosts of one database take turns (a session advisory lock of the schema, on a connection of the
// prewarm's own, outside the pool): after a restart the first reads from disk, the others then
// find the pages in the caches.

const (
	// prewarmPoll is how often the prewarmer asks whether the server started again, without a new
	// connection of the pool to wake it.
	prewarmPoll = 10 * time.Second
	// prewarmBufferShare is the share of shared_buffers the prewarm may fill (the rest is left to
	// the other work of the server).
	prewarmBufferShare = 0.75
	// prewarmLockClass is the first key of the prewarm's advisory lock; the second is the hash of
	// the schema.
	prewarmLockClass = 731_622_047
	// prewarmApplication is the application_name of the prewarm's connection (pg_stat_activity).
	prewarmApplication = "reelforge prewarm"
)

// prewarmRelations are the relations a search reads, in the order the prewarm reads them: the
// first ones matter most and take the room in shared buffers first. Each table comes with its
// TOAST table and the TOAST table's index. At 100k chunks, in a pass of 300 searches from a cold
// cache (pg_statio): the HNSW index (every vector search walks about 3,000 of its pages; 76% of
// its pages read), the primary keys and the small tables (every page read), the keyword leg's GIN
// index (36%), the chunks' heap and TOAST (the keyword leg's rows, ranked on their tsvector and
// read for their text: every page), and last the embeddings' heap, the largest, of which a pass
// reads a third (the keyword rows' cosines and the index scan's rows).
var prewarmRelations = []string{
	vectorIndex,
	"knowledge_chunks_pkey", "knowledge_embeddings_pkey", "knowledge_documents_pkey", "knowledge_sources_pkey",
	"knowledge_sources", "knowledge_documents",
	"knowledge_chunks_tsv",
	"knowledge_chunks",
	"knowledge_embeddings",
}

// prewarmer is the background prewarm of one Driver.
type prewarmer struct {
	d    *Driver
	log  *slog.Logger
	ext  string        // the extension to use: pg_prewarm (tests name one that does not exist)
	wake chan struct{} // the pool opened a connection: the server may have restarted
	stop context.CancelFunc
	done chan struct{}

	mu    sync.Mutex
	st    store.PrewarmStatus
	start time.Time    // the server start of the last prewarm that finished (or found pg_prewarm missing)
	runs  int          // prewarms begun (tests)
	last  []prewarmRel // the relations of the last prewarm (tests)
}

// newPrewarmer makes the prewarmer of d, using the extension ext; startPrewarmer runs it.
func newPrewarmer(d *Driver, log *slog.Logger, ext string) *prewarmer {
	return &prewarmer{d: d, log: log, ext: ext, wake: make(chan struct{}, 1), done: make(chan struct{}),
		st: store.PrewarmStatus{State: "running"}}
}

// startPrewarmer runs the prewarmer of d (if it has one) until stopPrewarmer.
func (d *Driver) startPrewarmer() {
	if d.pw == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	d.pw.stop = cancel
	go d.pw.run(ctx)
}

// stopPrewarmer ends the prewarmer and waits for it (a pg_prewarm in flight is cancelled).
func (d *Driver) stopPrewarmer() {
	if d.pw == nil || d.pw.stop == nil {
		return
	}
	d.pw.stop()
	<-d.pw.done
}

// PrewarmStatus implements store.PrewarmReporter.
func (d *Driver) PrewarmStatus() store.PrewarmStatus {
	if d.pw == nil {
		return store.PrewarmStatus{State: "off"}
	}
	d.pw.mu.Lock()
	defer d.pw.mu.Unlock()
	return d.pw.st
}

// connected is called when the pool opens a connection (AfterConnect): after a restart of the
// server, the pool's next use opens new ones.
func (pw *prewarmer) connected() {
	if pw == nil {
		return
	}
	select {
	case pw.wake <- struct{}{}:
	default:
	}
}

func (pw *prewarmer) run(ctx context.Context) {
	defer close(pw.done)
	poll := time.NewTicker(prewarmPoll)
	defer poll.Stop()
	for {
		pw.check(ctx)
		select {
		case <-ctx.Done():
			return
		case <-poll.C:
		case <-pw.wake:
		}
	}
}

// check prewarms when the server started since the last prewarm.
func (pw *prewarmer) check(ctx context.Context) {
	var start time.Time
	if err := pw.d.pool.QueryRow(ctx, `SELECT pg_postmaster_start_time()`).Scan(&start); err != nil {
		return // the server is away: the next poll or connection asks again
	}
	pw.mu.Lock()
	same := start.Equal(pw.start)
	pw.mu.Unlock()
	if same {
		return
	}
	st, err := pw.prewarm(ctx, start)
	if ctx.Err() != nil {
		return
	}
	pw.mu.Lock()
	defer pw.mu.Unlock()
	switch {
	case err != nil:
		// Not tried again until the server starts again (a restart in the middle of it is one).
		pw.start, st.State, st.Reason = start, "failed", err.Error()
		pw.log.Warn("pgstore: prewarm of the knowledge tables", "err", err)
	case st.State == "unavailable":
		pw.start = start
		pw.log.Info("pgstore: no prewarm of the knowledge tables after a restart of PostgreSQL (README, PostgreSQL)", "reason", st.Reason)
	default:
		pw.start, st.State = start, "done"
		pw.log.Info("pgstore: knowledge tables prewarmed", "shared_buffers_mb", st.BufferBytes>>20, "page_cache_mb", st.CacheBytes>>20,
			"left_mb", st.LeftBytes>>20, "seconds", st.Finished.Sub(st.Started).Seconds())
	}
	pw.st = st
}

// set records st as the prewarm's state.
func (pw *prewarmer) set(st store.PrewarmStatus) {
	pw.mu.Lock()
	pw.st = st
	pw.mu.Unlock()
}

// prewarm reads the relations of prewarmRelations into the caches for the server started at
// start, on a connection of its own, holding the schema's prewarm lock; it updates the state as
// it goes and returns the last one (its State "unavailable" without a usable pg_prewarm).
func (pw *prewarmer) prewarm(ctx context.Context, start time.Time) (store.PrewarmStatus, error) {
	st := store.PrewarmStatus{State: "waiting", ServerStart: start, Started: time.Now()}
	// Begun and waiting in one step: a reader who sees the new run never sees the last one's
	// state (TestPrewarm read the earlier run's "done" and plan so, under load).
	pw.mu.Lock()
	pw.runs++
	pw.st = st
	pw.mu.Unlock()
	fn, err := pw.function(ctx)
	if errors.Is(err, errNoPrewarm) {
		st.State, st.Reason = "unavailable", err.Error()
		// The server's own autoprewarm needs no extension in the database: its leader is a
		// process any role sees in pg_stat_activity.
		err = pw.d.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE backend_type = 'autoprewarm leader')`).Scan(&st.Autoprewarm)
		return st, err
	}
	if err != nil {
		return st, err
	}
	pw.set(st)
	connect := func() (*pgx.Conn, error) {
		cfg := pw.d.pool.Config().ConnConfig.Copy()
		cfg.RuntimeParams["application_name"] = prewarmApplication
		return pgx.ConnectConfig(ctx, cfg)
	}
	conn, err := connect()
	if err != nil {
		return st, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	// The lock goes with the connection; the pool's connections stay free for searches meanwhile.
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1, hashtext(current_schema()))`, int32(prewarmLockClass)); err != nil {
		return st, err
	}
	plan, err := prewarmPlan(ctx, conn)
	if err != nil {
		return st, err
	}
	st.State = "running"
	for _, r := range plan {
		if r.mode == "" {
			st.LeftBytes += r.bytes
		}
	}
	pw.set(st)
	other, err := connect()
	if err != nil {
		return st, err
	}
	defer other.Close(context.WithoutCancel(ctx))
	// Two relations at once, each connection taking the next one of the plan: the disk serves
	// two sequential reads faster than one (here 1.4 GB in 11.6 s against 20.3 s, loaded).
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next atomic.Int64
	work := func(c *pgx.Conn) error {
		for i := int(next.Add(1)) - 1; i < len(plan); i = int(next.Add(1)) - 1 {
			r := &plan[i]
			if r.mode == "" {
				continue
			}
			if err := c.QueryRow(wctx, `SELECT `+fn+`($1::oid::regclass, $2)`, r.oid, r.mode).Scan(&r.blocks); err != nil {
				cancel() // the other connection stops too
				return fmt.Errorf("pg_prewarm %s: %w", r.name, err)
			}
			pw.mu.Lock()
			if r.mode == "buffer" {
				pw.st.BufferBytes += r.bytes
			} else {
				pw.st.CacheBytes += r.bytes
			}
			pw.mu.Unlock()
		}
		return nil
	}
	errc := make(chan error, 1)
	go func() { errc <- work(other) }()
	err = work(conn)
	if err2 := <-errc; err == nil {
		err = err2
	}
	pw.mu.Lock()
	st, pw.last = pw.st, plan
	pw.mu.Unlock()
	if err != nil {
		return st, err
	}
	st.Finished = time.Now()
	return st, nil
}

// errNoPrewarm: the database has no pg_prewarm and this host may not create it.
var errNoPrewarm = errors.New("pgstore: no pg_prewarm")

// function returns the name of pg_prewarm's function in the database, schema-qualified, and
// creates the extension first if it is missing and this host may (a superuser): errNoPrewarm,
// wrapping the reason, when neither.
func (pw *prewarmer) function(ctx context.Context) (string, error) {
	find := func() (string, error) {
		var schema string
		err := pw.d.pool.QueryRow(ctx, `SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = $1`,
			pw.ext).Scan(&schema)
		return pgx.Identifier{schema, "pg_prewarm"}.Sanitize(), err
	}
	fn, err := find()
	if !errors.Is(err, pgx.ErrNoRows) {
		return fn, err
	}
	// In public, as pgvector, so that the schemas of one database (tests use one each) share it.
	_, cerr := pw.d.pool.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS `+pgx.Identifier{pw.ext}.Sanitize()+` WITH SCHEMA public`)
	// Another host (or test) may have created it meanwhile, its CREATE racing this one.
	if fn, err = find(); errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("%w: %s is not in the database and this host could not create it (%w)", errNoPrewarm, pw.ext, cerr)
	}
	return fn, err
}

// prewarmRel is one relation of the prewarm and where it goes: mode "buffer" (shared buffers),
// "read" (the OS page cache) or "" (neither: left to the searches).
type prewarmRel struct {
	oid    uint32
	name   string
	bytes  int64
	mode   string
	blocks int64 // the pages pg_prewarm read
}

// prewarmPlan lists the relations of prewarmRelations that exist, each table followed by its
// TOAST table's index and TOAST table, with their sizes, and places them (placePrewarm).
func prewarmPlan(ctx context.Context, conn *pgx.Conn) ([]prewarmRel, error) {
	var buffers, cache int64
	if err := conn.QueryRow(ctx, `SELECT
			(SELECT setting::bigint * pg_size_bytes(COALESCE(NULLIF(unit, ''), '1B')) FROM pg_settings WHERE name = 'shared_buffers'),
			(SELECT setting::bigint * pg_size_bytes(COALESCE(NULLIF(unit, ''), '1B')) FROM pg_settings WHERE name = 'effective_cache_size')`).
		Scan(&buffers, &cache); err != nil {
		return nil, err
	}
	rows, err := conn.Query(ctx, `SELECT x.rel, x.rel::regclass::text, pg_relation_size(x.rel)
		FROM unnest($1::text[]) WITH ORDINALITY AS w(name, ord)
		JOIN pg_class c ON c.oid = to_regclass(w.name)
		CROSS JOIN LATERAL (VALUES (c.oid, 0), ((SELECT i.indexrelid FROM pg_index i WHERE i.indrelid = c.reltoastrelid LIMIT 1), 1),
			(NULLIF(c.reltoastrelid, 0), 2)) AS x(rel, sub)
		WHERE x.rel IS NOT NULL ORDER BY w.ord, x.sub`, prewarmRelations)
	if err != nil {
		return nil, err
	}
	rels, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (prewarmRel, error) {
		var p prewarmRel
		err := r.Scan(&p.oid, &p.name, &p.bytes)
		return p, err
	})
	if err != nil {
		return nil, err
	}
	placePrewarm(rels, int64(float64(buffers)*prewarmBufferShare), cache-buffers)
	return rels, nil
}

// placePrewarm sets each relation's mode, in order: into shared buffers while the relations
// placed there fit in buffers (bytes), else into the OS page cache while those fit in cache, else
// nowhere. A relation that does not fit leaves the room to the next ones, which may.
func placePrewarm(rels []prewarmRel, buffers, cache int64) {
	for i := range rels {
		switch r := &rels[i]; {
		case r.bytes == 0:
		case r.bytes <= buffers:
			r.mode, buffers = "buffer", buffers-r.bytes
		case r.bytes <= cache:
			r.mode, cache = "read", cache-r.bytes
		}
	}
}
