// Package pgstore is the PostgreSQL store driver: a pgx/v5 pool, migrations under an advisory
// lock, and pgvector's vector column and HNSW index when the extension can be created.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgvector/pgvector-go"
	pgxvec "github.com/pgvector/pgvector-go/pgx"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/sqldb"
)

// Driver is the PostgreSQL store.
type Driver struct {
	*sqldb.DB
	pool   *pgxpool.Pool
	vector bool
	// half: the table has the halfvec column (pgvector is or was used), where the pgvector path
	// keeps its vectors without the float32 bytes (see inHalfColumn); Embeddings reads it.
	half bool
	df   *sqldb.TermCounts[float64] // document frequencies of the keyword leg
	idx  *indexer                   // the vector indexer (indexer.go); nil with ManualIndexer
	pw   *prewarmer                 // the prewarm of the server's caches (prewarm.go); nil with NoPrewarm
	// shrink closes the pool's idle connections (shrink.go); nil without PoolIdle.
	shrink *shrinker
	lazy   *sqldb.DB // the pool, with transactions that commit without waiting for the WAL flush (AddDocuments)
	schema string    // Options.Schema
	// batch sends pipelined batches (addNew): the pool; nil in a transaction's Driver (InTx).
	batch batchSender
}

var _ store.Driver = (*Driver)(nil)

// Options configure Open.
type Options struct {
	// VectorSearch tries to use pgvector (CREATE EXTENSION vector); false keeps the in-memory path.
	VectorSearch bool
	// Schema, when set, is created and put first on the search path (tests use one per test).
	Schema string
	Clock  func() time.Time
	Logger *slog.Logger
	// ManualIndexer leaves new embeddings out of the HNSW index until IndexPendingVectors is
	// called, and the keyword statistics to an explicit ANALYZE (tests); by default a background
	// indexer moves them in and refreshes the statistics (indexer.go).
	ManualIndexer bool
	// NoPrewarm leaves the database server's caches alone; by default the driver reads the
	// relations searches use into them in the background, when it opens and after each start of
	// the server (prewarm.go).
	NoPrewarm bool
	// prewarmExt is the extension the prewarm uses (tests name one that does not exist).
	prewarmExt string

	// Timeout is each store call's deadline (DB_TIMEOUT_MS), pool acquire and connect included;
	// SlowTimeout that of the migrations (DB_SLOW_TIMEOUT_MS). 0: none.
	Timeout, SlowTimeout time.Duration
	// PoolMax is the pool's size (DB_POOL_MAX; 0: the URL's pool_max_conns, else pgxpool's
	// default, the larger of 4 and the CPUs); PoolMin the connections kept open (DB_POOL_MIN);
	// PoolIdle how long the pool keeps connections above PoolMin that it did not need at once
	// (DB_POOL_IDLE_MS; 0: pgxpool's rule, an idle connection closed after 30 minutes).
	PoolMax, PoolMin int
	PoolIdle         time.Duration
}

// application is the application_name of the host's connections, unless DATABASE_URL sets one.
const application = "reelforge"

// migrationLock is the advisory lock key under which hosts migrate one at a time.
const migrationLock = 7_316_220_451

// Open connects, migrates under an advisory lock, and sets up pgvector when asked and possible.
func Open(ctx context.Context, url string, opt Options) (*Driver, error) {
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("pgstore: parse DATABASE_URL: %w", err)
	}
	if opt.Schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = opt.Schema + ",public"
	}
	// No JIT compilation on this service's connections (unless the URL asks for it): its queries
	// are short, and a plan whose estimate passes jit_above_cost (the term statistics' subqueries at
	// 100k chunks) spent 50 to 70 ms compiling to save a few.
	if _, set := cfg.ConnConfig.RuntimeParams["jit"]; !set {
		cfg.ConnConfig.RuntimeParams["jit"] = "off"
	}
	limitPool(cfg, opt)
	// The migrations may take long (an index built over every row): their calls get SlowTimeout.
	mctx := store.WithCallTimeout(ctx, opt.SlowTimeout)
	// Two connections at least: one holds the migration lock while River's migrations run on
	// another (migrateRiver).
	scfg := cfg.Copy()
	scfg.MaxConns = max(scfg.MaxConns, 2)
	setup, err := pgxpool.NewWithConfig(mctx, scfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore: connect: %w", mapError(err))
	}
	vector, err := prepare(mctx, setup, opt, log)
	setup.Close()
	if err != nil {
		return nil, err
	}
	d := &Driver{vector: vector, half: vector, df: newTermCounts(), schema: opt.Schema}
	if !opt.NoPrewarm {
		// Made before the pool, whose connections tell it of themselves (AfterConnect); it starts
		// once the driver is open.
		ext := opt.prewarmExt
		if ext == "" {
			ext = "pg_prewarm"
		}
		d.pw = newPrewarmer(d, log, ext)
	}
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		// A new connection: after a restart of the server the pool opens new ones, and the
		// prewarmer then looks whether it should prewarm.
		d.pw.connected()
		if !vector {
			return nil
		}
		if err := pgxvec.RegisterTypes(ctx, c); err != nil {
			return err
		}
		registerHalfArray(c.TypeMap())
		return nil
	}
	if opt.PoolIdle > 0 {
		d.shrink = &shrinker{min: cfg.MinConns}
		cfg.ConnConfig.Tracer = tracer{d.shrink}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore: connect: %w", err)
	}
	d.pool, d.batch = pool, pool
	d.DB = sqldb.New(poolConn{pool}, d.begin, dialect, opt.Clock)
	d.lazy = sqldb.New(poolConn{pool}, d.beginLazy, dialect, opt.Clock)
	d.DB.SetTimeout(opt.Timeout)
	d.lazy.SetTimeout(opt.Timeout)
	if err := d.Ping(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	if !vector {
		err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()
			AND table_name = 'knowledge_embeddings' AND column_name = 'embedding_vector')`).Scan(&d.half)
		if err != nil {
			pool.Close()
			return nil, fmt.Errorf("pgstore: vector column: %w", err)
		}
	}
	if !opt.ManualIndexer {
		d.startIndexer(log)
	}
	d.startPrewarmer()
	if d.shrink != nil {
		d.shrink.pool = pool
		d.shrink.start(opt.PoolIdle)
	}
	return d, nil
}

// limitPool applies the pool's limits and deadlines to cfg (README, "PostgreSQL": DB_POOL_MAX
// against max_connections).
func limitPool(cfg *pgxpool.Config, opt Options) {
	if opt.PoolMax > 0 {
		cfg.MaxConns = int32(opt.PoolMax)
	}
	// Idle connections above MinConns are closed by the shrinker (shrink.go), not by pgxpool's
	// MaxConnIdleTime, which a host's polling loops defeat.
	cfg.MinConns = int32(min(opt.PoolMin, int(cfg.MaxConns)))
	// The host's connections say whose they are in pg_stat_activity (unless the URL names them).
	if _, set := cfg.ConnConfig.RuntimeParams["application_name"]; !set {
		cfg.ConnConfig.RuntimeParams["application_name"] = application
	}
	if opt.Timeout > 0 && cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = opt.Timeout // the URL's connect_timeout wins
	}
	// A call whose context ends (the store's deadline, a client gone) asks the server to cancel
	// the statement, so it does not go on holding locks, and gives up on the connection half a second
	// later when the server does not answer (paused, unreachable): the caller is answered
	// either way.
	cfg.ConnConfig.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: 500 * time.Millisecond}
	}
}

// prepare creates the schema, migrates and sets up pgvector, holding the migration lock on one
// connection so several hosts starting together take turns.
func prepare(ctx context.Context, pool *pgxpool.Pool, opt Options, log *slog.Logger) (bool, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return false, fmt.Errorf("pgstore: connect: %w", mapError(err))
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(migrationLock)); err != nil {
		return false, fmt.Errorf("pgstore: migration lock: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(migrationLock)) // released with the session anyway
	if opt.Schema != "" {
		if _, err := conn.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{opt.Schema}.Sanitize()); err != nil {
			return false, fmt.Errorf("pgstore: create schema: %w", err)
		}
	}
	db := sqldb.New(poolConn{conn.Conn()}, func(ctx context.Context) (sqldb.Tx, error) {
		tx, err := conn.Begin(ctx)
		if err != nil {
			return nil, err
		}
		return newTxConn(tx), nil
	}, dialect, opt.Clock)
	if err := db.Migrate(ctx, func(ctx context.Context, tx *sqldb.DB, script string) error {
		_, err := tx.Exec(ctx, script)
		return err
	}); err != nil {
		return false, err
	}
	if err := migrateRiver(ctx, pool, opt.Schema, log); err != nil {
		return false, err
	}
	if !opt.VectorSearch {
		log.Info("knowledge search path: in-memory vector scoring (KB_VECTOR_SEARCH=off)")
		return false, nil
	}
	// The extension lives in public so that per-test schemas share one installation.
	if _, err := conn.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS vector WITH SCHEMA public`); err != nil {
		log.Warn("knowledge search path: in-memory vector scoring (pgvector unavailable)", "reason", err.Error())
		return false, nil
	}
	bulk, err := bulkLoading(ctx, conn)
	if err != nil {
		return false, fmt.Errorf("pgstore: pgvector setup: %w", err)
	}
	for _, q := range []string{
		// Half precision (migration 0700 converts a vector(1536) column of an older database).
		`ALTER TABLE knowledge_embeddings ADD COLUMN IF NOT EXISTS embedding_vector public.halfvec(1536)`,
		// Inline and never compressed (PLAIN; 3 KiB fits a page): scoring a candidate and the HNSW
		// scan's heap check read one page, not the TOAST table. MAIN, inline too, had the server try
		// pglz on every row past 2 KiB, and half floats do not compress: that try was about a third
		// of the server's CPU in an ingest.
		`ALTER TABLE knowledge_embeddings ALTER COLUMN embedding_vector SET STORAGE PLAIN`,
		vectorIndexDDL,
		pendingIndexDDL,
		// Indexes of earlier versions: the new index is built first (the search keeps an index
		// meanwhile), then the old ones go. Every statement is idempotent and runs under the
		// migration lock.
		`DROP INDEX IF EXISTS knowledge_embeddings_hnsw`,
		`DROP INDEX IF EXISTS knowledge_embeddings_hnsw_m8`,
	} {
		if q == vectorIndexDDL && bulk {
			// Its BuildVectorIndex builds the index once, over every row: one built here would be
			// dropped by the load's next DropVectorIndex (a resumed load) or built twice.
			log.Warn("pgstore: a bulk load of the knowledge base is unfinished (DropVectorIndex without BuildVectorIndex): " +
				"the HNSW index is left for BuildVectorIndex to build; until then the vector leg reads every row")
			continue
		}
		if _, err := conn.Exec(ctx, q); err != nil {
			return false, fmt.Errorf("pgstore: pgvector setup: %w", err)
		}
	}
	if err := fillHalfVectors(ctx, conn.Conn(), log); err != nil {
		return false, fmt.Errorf("pgstore: pgvector setup: %w", err)
	}
	log.Info("knowledge search path: pgvector (HNSW over halfvec, cosine; a background indexer)")
	return true, nil
}

// fillHalfVectors moves into the halfvec column the vectors of its dimension that only have
// float32 bytes: those written while the database ran with KB_VECTOR_SEARCH=off (or before
// pgvector was installed), which the vector leg would never find otherwise. Such rows are written
// pending (vector_indexed FALSE, the column's default since migration 0700), so the pending index
// finds them without reading the table, and they stay pending: the indexer adds them to the graph
// and the search scans them exactly until then. Rows written on the in-memory path before 0700
// were marked indexed by it and are not looked for (that would read the whole table at every
// start).
func fillHalfVectors(ctx context.Context, c *pgx.Conn, log *slog.Logger) error {
	var after string
	filled := 0
	for {
		rows, err := c.Query(ctx, `SELECT chunk_id, model, embedding FROM knowledge_embeddings
			WHERE NOT vector_indexed AND embedding_vector IS NULL AND embedding IS NOT NULL AND chunk_id > $1
			ORDER BY chunk_id LIMIT 500`, after)
		if err != nil {
			return err
		}
		var ids, models []string
		var vecs []string
		seen := 0
		for rows.Next() {
			var id, model string
			var b []byte
			if err := rows.Scan(&id, &model, &b); err != nil {
				rows.Close()
				return err
			}
			seen, after = seen+1, id
			if v := sqldb.DecodeVector(b); inHalfColumn(v) {
				ids, models, vecs = append(ids, id), append(models, model), append(vecs, pgvector.NewHalfVector(v).String())
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if len(ids) > 0 {
			if _, err := c.Exec(ctx, `UPDATE knowledge_embeddings e SET embedding_vector = u.v::public.halfvec, embedding = NULL, vector_indexed = FALSE
				FROM unnest($1::text[], $2::text[], $3::text[]) AS u(id, model, v) WHERE e.chunk_id = u.id AND e.model = u.model`,
				ids, models, vecs); err != nil {
				return err
			}
			filled += len(ids)
		}
		if seen < 500 {
			break
		}
	}
	if filled > 0 {
		log.Info("pgstore: vectors written on the in-memory path moved into the halfvec column, for the indexer", "vectors", filled)
	}
	return nil
}

// vectorIndex is the HNSW index of the vector leg, over the half-precision vectors of the rows the
// indexer has moved in (partial: WHERE vector_indexed; see indexer.go). Its graph has m 8 and
// ef_construction 32 (pgvector's defaults are 16 and 64): every row indexed inserts into the
// graph, searching it with ef_construction candidates and relinking up to 2*m neighbours at the
// bottom layer, each a 1536-dimension distance and a page; with these parameters an insert costs
// about a third. The search makes up the recall with ef_search (the candidates the leg returns,
// 100 and more; see searchSettings) and iterative scans. Changing the parameters means a new index
// name: the setup builds the new index and drops the previous ones by name.
//
// pendingIndexDDL lists the rows not in the graph yet, for the indexer and for the search's exact
// scan of them.
const (
	vectorIndex    = "knowledge_embeddings_hnsw_h8"
	vectorIndexDDL = `CREATE INDEX IF NOT EXISTS ` + vectorIndex + ` ON knowledge_embeddings
		USING hnsw (embedding_vector public.halfvec_cosine_ops) WITH (m = 8, ef_construction = 32) WHERE vector_indexed`
	pendingIndexDDL = `CREATE INDEX IF NOT EXISTS knowledge_embeddings_pending ON knowledge_embeddings (chunk_id) WHERE NOT vector_indexed`
)

// DropVectorIndex drops the HNSW index, for a bulk load that builds it afterwards with
// BuildVectorIndex (one CREATE INDEX is several times faster than as many inserts). Until then
// the vector leg reads every row.
//
// Meanwhile rows are written indexed: the column's default (vector_indexed, FALSE otherwise)
// becomes TRUE. With no graph to insert them into, a pending row would only be written a second
// time when the indexer (or the build) flags it, a whole 3 KB row version each. The default is the
// bulk load's mark in the schema: every host's writes follow it, and it outlives a load that was
// interrupted.
func (d *Driver) DropVectorIndex(ctx context.Context) error {
	if !d.vector {
		return store.ErrNotSupported
	}
	if err := d.execTx(ctx, `DROP INDEX IF EXISTS `+vectorIndex,
		`ALTER TABLE knowledge_embeddings ALTER COLUMN vector_indexed SET DEFAULT TRUE`); err != nil {
		return fmt.Errorf("pgstore: drop vector index: %w", err)
	}
	return nil
}

// BulkLoading reports whether a bulk load is unfinished: DropVectorIndex ran and BuildVectorIndex
// has not since (the column default it sets is still there). Open then leaves the HNSW index to
// BuildVectorIndex, so a resumed load builds it once.
func (d *Driver) BulkLoading(ctx context.Context) (bool, error) {
	if !d.vector {
		return false, nil
	}
	return bulkLoading(ctx, d.pool)
}

func bulkLoading(ctx context.Context, q interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}) (bool, error) {
	var bulk bool
	err := q.QueryRow(ctx, `SELECT COALESCE(pg_get_expr(a.adbin, a.adrelid) = 'true', FALSE) FROM pg_attrdef a
		JOIN pg_attribute c ON c.attrelid = a.adrelid AND c.attnum = a.adnum
		WHERE a.adrelid = 'knowledge_embeddings'::regclass AND c.attname = 'vector_indexed'`).Scan(&bulk)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("pgstore: bulk load mark: %w", err)
	}
	return bulk, nil
}

// BuildVectorIndex marks every row indexed and creates the HNSW index over them if it is missing
// (one CREATE INDEX instead of the indexer's inserts), and ends a bulk load (rows are written
// pending again, for the indexer); then it updates the planner statistics and the visibility map
// of the knowledge tables (VACUUM ANALYZE), as after a bulk load.
func (d *Driver) BuildVectorIndex(ctx context.Context) error {
	if !d.vector {
		return store.ErrNotSupported
	}
	if err := d.execTx(ctx, `UPDATE knowledge_embeddings SET vector_indexed = TRUE WHERE NOT vector_indexed`, vectorIndexDDL,
		`ALTER TABLE knowledge_embeddings ALTER COLUMN vector_indexed SET DEFAULT FALSE`); err != nil {
		return fmt.Errorf("pgstore: build vector index: %w", err)
	}
	if _, err := d.pool.Exec(ctx, `VACUUM ANALYZE knowledge_chunks, knowledge_embeddings`); err != nil {
		return fmt.Errorf("pgstore: build vector index: %w", err)
	}
	return nil
}

// execTx runs statements in one transaction.
func (d *Driver) execTx(ctx context.Context, statements ...string) error {
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) // after Commit it is a no-op
	for _, q := range statements {
		if _, err := tx.Exec(ctx, q); err != nil {
			return err
		}
	}
	return tx.Commit(ctx)
}

var dialect = &sqldb.Dialect{
	Name:     "postgres",
	MapError: mapError,
	TimeArg:  func(t time.Time) any { return t },
}

// AsFault is the database's state (a store.Fault: unreachable, out of connections, full...) in
// an error another library met on this driver's database (the job queue's, host/queue), or nil
// when err is about something else.
func (d *Driver) AsFault(err error) *store.Fault { return store.FaultOf(mapError(err)) }

func mapError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return store.ErrNotFound
	}
	if store.FaultOf(err) != nil {
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" {
		return fmt.Errorf("%w: %v", store.ErrConflict, err)
	}
	if cause := faultCause(err); cause != "" {
		return &store.Fault{Cause: cause, Err: err}
	}
	return err
}

// faultCause is the store.Fault cause of a PostgreSQL error that is the database's state, not the
// statement's: "" for any other error.
func faultCause(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "53300": // too_many_connections (the server's max_connections)
			return store.CauseConnections
		case pe.Code == "53100": // disk_full
			return store.CauseFull
		case pe.Code == "25006": // read_only_sql_transaction (a standby, default_transaction_read_only)
			return store.CauseReadOnly
		case pe.Code == "57014", pe.Code == "55P03": // query_canceled (statement_timeout), lock_not_available
			return store.CauseTimeout
		case strings.HasPrefix(pe.Code, "57P"), strings.HasPrefix(pe.Code, "08"), strings.HasPrefix(pe.Code, "53"):
			// admin/crash shutdown, cannot connect now, connection exceptions, out of memory
			return store.CauseUnreachable
		}
		return ""
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return store.CauseUnreachable
	}
	if pgconn.Timeout(err) {
		return store.CauseTimeout
	}
	// A connection that broke under a statement: the server went away (killed, restarted, the
	// network dropped). pgx closes a connection whose socket failed, so the calls made on it
	// afterwards (the transaction's next statement, its commit) fail with ErrConnClosed: the same
	// loss, met one call later.
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, pgconn.ErrConnClosed) {
		return store.CauseUnreachable
	}
	return ""
}

// Pool exposes the pgx pool to this driver's own extensions (LISTEN/NOTIFY, advisory locks).
func (d *Driver) Pool() *pgxpool.Pool { return d.pool }

// Name implements store.Driver.
func (d *Driver) Name() string { return "postgres" }

// Ping implements store.Driver.
func (d *Driver) Ping(ctx context.Context) error {
	if err := d.DB.Bounded(ctx, d.pool.Ping); err != nil {
		if f := store.FaultOf(err); f != nil && f.Cause == store.CauseTimeout && d.pool.Stat().AcquiredConns() >= d.pool.Config().MaxConns {
			// No answer because every connection of the pool is taken: say so.
			err = &store.Fault{Cause: store.CauseConnections, Err: err}
		}
		return fmt.Errorf("pgstore: ping: %w", err)
	}
	return nil
}

// Close implements store.Driver.
func (d *Driver) Close() error {
	d.stopIndexer()
	d.stopPrewarmer()
	d.shrink.halt()
	if d.pool != nil {
		d.pool.Close()
	}
	return nil
}

// SupportsVectorSearch implements store.Driver.
func (d *Driver) SupportsVectorSearch() bool { return d.vector }

// ParallelWrites implements store.Driver.
func (d *Driver) ParallelWrites() bool { return true }

// InTx implements store.Driver.
func (d *Driver) InTx(ctx context.Context, fn func(tx store.Driver) error) error {
	return d.DB.WithTx(ctx, func(tx *sqldb.DB) error {
		// A copy of d, so that every setting (half, vector, ...) carries over, on tx; lazy and
		// batch send outside the transaction, so a transaction's Driver has neither.
		td := *d
		td.DB, td.lazy, td.batch = tx, nil, nil
		return fn(&td)
	})
}

func (d *Driver) begin(ctx context.Context) (sqldb.Tx, error) {
	// The pool's Begin acquires a connection: under the store's deadline, so that a pool with no
	// connection free, or a server that does not answer, fails the call rather than hold it.
	var tx pgx.Tx
	err := d.DB.Bounded(ctx, func(ctx context.Context) (err error) {
		tx, err = d.pool.Begin(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	return newTxConn(tx), nil
}

// beginLazy starts a transaction whose commit does not wait for its WAL to reach the disk
// (synchronous_commit off, for this transaction only): see AddDocuments.
func (d *Driver) beginLazy(ctx context.Context) (sqldb.Tx, error) {
	var tx pgx.Tx
	err := d.lazy.Bounded(ctx, func(ctx context.Context) (err error) {
		tx, err = d.pool.BeginTx(ctx, pgx.TxOptions{BeginQuery: `BEGIN; SET LOCAL synchronous_commit = off`})
		return err
	})
	if err != nil {
		return nil, err
	}
	return newTxConn(tx), nil
}

type pgQuerier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// poolConn runs statements on a pool, a single connection or a transaction (txConn).
type poolConn struct{ q pgQuerier }

func (c poolConn) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	tag, err := c.q.Exec(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

func (c poolConn) Query(ctx context.Context, q string, args ...any) (sqldb.Rows, error) {
	rows, err := c.q.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return rowsAdapter{rows}, nil
}

func (c poolConn) QueryRow(ctx context.Context, q string, args ...any) sqldb.Row {
	return c.q.QueryRow(ctx, q, args...)
}

// txConn is a transaction: its statements go through poolConn, and it ends.
type txConn struct {
	poolConn
	tx pgx.Tx
}

func newTxConn(tx pgx.Tx) txConn { return txConn{poolConn{tx}, tx} }

func (t txConn) Commit(ctx context.Context) error   { return t.tx.Commit(ctx) }
func (t txConn) Rollback(ctx context.Context) error { return t.tx.Rollback(ctx) }

type rowsAdapter struct{ r pgx.Rows }

func (r rowsAdapter) Next() bool             { return r.r.Next() }
func (r rowsAdapter) Scan(dest ...any) error { return r.r.Scan(dest...) }
func (r rowsAdapter) Close() error           { r.r.Close(); return nil }
func (r rowsAdapter) Err() error             { return r.r.Err() }
