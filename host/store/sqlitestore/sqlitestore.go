// Package sqlitestore is the embedded store driver: SQLite through github.com/mattn/go-sqlite3
// (cgo; the build tag sqlite_fts5 compiles in the keyword index, see fts5_tag.go), in one file
// under the data directory, with WAL, a busy timeout and foreign keys on.
package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/sqldb"
)

// Driver is the SQLite store.
type Driver struct {
	*sqldb.DB
	sqlDB *sql.DB
	df    *sqldb.TermCounts[int] // shared with the drivers of InTx
	wal   *walGuard              // shared with the drivers of InTx
}

var _ store.Driver = (*Driver)(nil)

// Options configure Open.
type Options struct {
	Clock func() time.Time // nil: time.Now
	// Timeout is each store call's deadline and how long a write waits for another's lock (the
	// busy timeout; DB_TIMEOUT_MS); 0: 15 s and no deadline. SlowTimeout is the migrations'.
	Timeout, SlowTimeout time.Duration
}

// Open opens (creating when needed) the database file at path and applies the migrations.
func Open(ctx context.Context, path string, opt Options) (*Driver, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("sqlitestore: %w", err)
	}
	if err := ownerOnly(path); err != nil {
		return nil, err
	}
	// The settings are connPragmas; _txlock and _stmt_cache_size are the driver's own:
	// transactions BEGIN IMMEDIATE, and each connection keeps its 64 most recently used prepared
	// statements, reads and writes, in transactions or not, so the same statement is not compiled
	// again every time it runs (an ingest runs a dozen statements a document; compiling them was
	// about a tenth of its CPU time). It is the driver's only statement cache.
	// _busy_timeout is set before connPragmas run, so the switch to WAL waits for a lock like any
	// statement.
	busy := 15 * time.Second
	if opt.Timeout > 0 {
		busy = opt.Timeout
	}
	sqlDB, err := sql.Open(driverName, fmt.Sprintf("file:%s?_txlock=immediate&_stmt_cache_size=64&_busy_timeout=%d", path, busy.Milliseconds()))
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: open: %w", err)
	}
	sqlDB.SetMaxOpenConns(8)
	sqlDB.SetMaxIdleConns(8)
	sqlDB.SetConnMaxIdleTime(0)
	d := &Driver{sqlDB: sqlDB, df: newTermCounts()}
	d.wal = &walGuard{db: sqlDB}
	d.DB = sqldb.New(dbConn{sqlDB, d.wal}, d.begin, dialect, opt.Clock)
	d.DB.SetTimeout(opt.Timeout)
	// The projects listing cache (sqldb/listcache.go) is what meets make bench's API target
	// (authenticated GET /api/projects at 64 clients: at least 30% of bare Fiber, p99 at most
	// 10 ms): without it the listing ran a fifth to a quarter of bare Fiber's rate in the same
	// run. The rule it imposes: only this process writes projects to the file, so one host per
	// SQLite file. app.New refuses a second host on the same DATA_DIR; the other commands
	// (user, token, kb ingest, migrate) may run beside the host because they never write
	// projects. pgstore, whose database several hosts share, keeps no pages.
	d.DB.CacheProjectLists()
	if err := d.Ping(ctx); err != nil {
		sqlDB.Close()
		return nil, err
	}
	// BEGIN IMMEDIATE (see _txlock) makes concurrent migrators take turns. River's tables
	// (host/queue) come after ours.
	mctx := store.WithCallTimeout(ctx, opt.SlowTimeout)
	if err := d.DB.Migrate(mctx, func(ctx context.Context, tx *sqldb.DB, script string) error {
		_, err := tx.Exec(ctx, script)
		return err
	}); err != nil {
		sqlDB.Close()
		return nil, err
	}
	if err := migrateRiver(mctx, sqlDB, slog.New(slog.DiscardHandler)); err != nil {
		sqlDB.Close()
		return nil, err
	}
	return d, nil
}

// ownerOnly makes the database file readable by its owner only (0600) before SQLite opens it: it
// holds password and key hashes and every user's knowledge. SQLite creates the -wal and -shm
// files with the mode of the database file, so they follow; files an earlier version created
// with the umask's mode (0644) are narrowed too.
func ownerOnly(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("sqlitestore: create %s: %w", filepath.Base(path), err)
	}
	f.Close()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Chmod(p, 0o600); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("sqlitestore: %w", err)
		}
	}
	return nil
}

// driverName is go-sqlite3 with connPragmas run on every new connection.
const driverName = "sqlite3_reelforge"

// connPragmas are every connection's settings, in one place (go-sqlite3's DSN knows some of them
// and silently ignores a misspelt one; TestPragmas checks them all). The busy timeout is the
// DSN's (Open). Reads go through a 256 MB
// memory map, temporary tables stay in memory, and the WAL is copied back into the database file
// once it holds 10,000 pages (40 MB), not the default 1,000: each copy syncs the file, and pages
// written again and again between copies (the keyword index's, a document list's) are copied
// once. An ingest of 400 documents synced 17 times instead of 92. journal_size_limit cuts the WAL
// file back to 8 MB whenever a checkpoint lets it start over, so the space it grew to (up to the
// 40 MB between checkpoints, more while a disk-full incident kept checkpoints from finishing) is
// given back to the disk instead of being held for the file's life (walGuard truncates it whole
// once writes succeed again).
const connPragmas = `PRAGMA journal_mode=WAL; PRAGMA foreign_keys=ON;
	PRAGMA synchronous=NORMAL; PRAGMA cache_size=-16000; PRAGMA mmap_size=268435456;
	PRAGMA temp_store=MEMORY; PRAGMA wal_autocheckpoint=10000; PRAGMA journal_size_limit=8388608`

func init() {
	sql.Register(driverName, &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		_, err := c.Exec(connPragmas, nil)
		return err
	}})
}

var dialect = &sqldb.Dialect{
	Name:     "sqlite",
	MapError: mapError,
	TimeArg:  func(t time.Time) any { return t.UTC().Format(sqldb.SQLiteTimeFormat) },
}

// AsFault is the database's state (a store.Fault: unreachable, out of connections, full...) in
// an error another library met on this driver's database (the job queue's, host/queue), or nil
// when err is about something else.
func (d *Driver) AsFault(err error) *store.Fault { return store.FaultOf(mapError(err)) }

func mapError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	if store.FaultOf(err) != nil {
		return err
	}
	var se sqlite3.Error
	if errors.As(err, &se) {
		switch se.ExtendedCode {
		case sqlite3.ErrConstraintUnique, sqlite3.ErrConstraintPrimaryKey:
			return fmt.Errorf("%w: %v", store.ErrConflict, err)
		}
		// The database's state, not the statement's: a store.Fault (store/fault.go).
		switch se.Code {
		case sqlite3.ErrFull:
			return &store.Fault{Cause: store.CauseFull, Err: err}
		case sqlite3.ErrIoErr:
			// A write the file system refused: on a full disk SQLite reports SQLITE_FULL for the
			// database file but SQLITE_IOERR for the WAL's shared memory or an fsync.
			if errors.Is(se.SystemErrno, syscall.ENOSPC) || errors.Is(se.SystemErrno, syscall.EDQUOT) {
				return &store.Fault{Cause: store.CauseFull, Err: err}
			}
			return &store.Fault{Cause: store.CauseIO, Err: err}
		case sqlite3.ErrReadonly:
			return &store.Fault{Cause: store.CauseReadOnly, Err: err}
		case sqlite3.ErrBusy, sqlite3.ErrLocked:
			return &store.Fault{Cause: store.CauseBusy, Err: err}
		case sqlite3.ErrCantOpen, sqlite3.ErrNomem:
			return &store.Fault{Cause: store.CauseUnreachable, Err: err}
		}
	}
	return err
}

// Name implements store.Driver.
func (d *Driver) Name() string { return "sqlite" }

// Ping implements store.Driver.
func (d *Driver) Ping(ctx context.Context) error {
	if err := d.DB.Bounded(ctx, d.sqlDB.PingContext); err != nil {
		return fmt.Errorf("sqlitestore: ping: %w", err)
	}
	return nil
}

// SQLDB is the pool the store runs on (its connection settings, pragmas and size), for a library
// that takes a *sql.DB, as River's SQLite driver does (bench/riverbench).
func (d *Driver) SQLDB() *sql.DB { return d.sqlDB }

// Close implements store.Driver.
func (d *Driver) Close() error {
	if d.sqlDB == nil {
		return nil
	}
	return d.sqlDB.Close()
}

// SupportsVectorSearch implements store.Driver: SQLite scores vectors in memory.
func (d *Driver) SupportsVectorSearch() bool { return false }

// ParallelWrites implements store.Driver: SQLite has one writer at a time.
func (d *Driver) ParallelWrites() bool { return false }

// InTx implements store.Driver.
func (d *Driver) InTx(ctx context.Context, fn func(tx store.Driver) error) error {
	return d.DB.WithTx(ctx, func(tx *sqldb.DB) error {
		return fn(&Driver{DB: tx, sqlDB: nil, df: d.df, wal: d.wal})
	})
}

func (d *Driver) begin(ctx context.Context) (sqldb.Tx, error) {
	tx, err := d.sqlDB.BeginTx(ctx, nil)
	if err != nil {
		d.wal.saw(err)
		return nil, err
	}
	return txConn{tx, d.wal}, nil
}

type queryer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// dbConn runs statements on the pool (autocommit) or, through txConn, in a transaction; each
// outcome goes to the walGuard.
type dbConn struct {
	q   queryer
	wal *walGuard
}

func (c dbConn) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	res, err := c.q.ExecContext(ctx, sqldb.RebindSQLite(q), args...)
	if err != nil {
		c.wal.saw(err)
		return 0, err
	}
	c.wal.saw(nil)
	return res.RowsAffected()
}

func (c dbConn) Query(ctx context.Context, q string, args ...any) (sqldb.Rows, error) {
	rows, err := c.q.QueryContext(ctx, sqldb.RebindSQLite(q), args...)
	if err != nil {
		c.wal.saw(err)
		return nil, err
	}
	return rows, nil
}

// QueryRow reads the statement's answer to its end, which database/sql's QueryRow does not do for
// us: with go-sqlite3's statement cache, the statement's last step (where an UPDATE ... RETURNING
// outside a transaction commits) is never taken, its closing resets the statement and drops the
// error, and a claim whose write failed on a full disk came back as if it had been made. The
// executor then took the same run over about 10,000 times a second.
func (c dbConn) QueryRow(ctx context.Context, q string, args ...any) sqldb.Row {
	rows, err := c.q.QueryContext(ctx, sqldb.RebindSQLite(q), args...)
	return drainedRow{rows: rows, err: err, wal: c.wal}
}

type drainedRow struct {
	rows *sql.Rows
	err  error
	wal  *walGuard
}

func (r drainedRow) Scan(dest ...any) error {
	err := r.scan(dest)
	if !errors.Is(err, sql.ErrNoRows) {
		r.wal.saw(err)
	}
	return err
}

func (r drainedRow) scan(dest []any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	for r.rows.Next() { // a single-row query: at most the statement's end
	}
	if err := r.rows.Err(); err != nil {
		return err
	}
	return r.rows.Close()
}

type txConn struct {
	tx  *sql.Tx
	wal *walGuard
}

func (t txConn) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	return dbConn{t.tx, t.wal}.Exec(ctx, q, args...)
}
func (t txConn) Query(ctx context.Context, q string, args ...any) (sqldb.Rows, error) {
	return dbConn{t.tx, t.wal}.Query(ctx, q, args...)
}
func (t txConn) QueryRow(ctx context.Context, q string, args ...any) sqldb.Row {
	return dbConn{t.tx, t.wal}.QueryRow(ctx, q, args...)
}
func (t txConn) Commit(context.Context) error {
	err := t.tx.Commit()
	t.wal.saw(err)
	return err
}
func (t txConn) Rollback(context.Context) error { return t.tx.Rollback() }

var _ store.PubSub = (*Driver)(nil)

// Publish implements store.PubSub: SQLite serves one host, there is no one to tell.
func (d *Driver) Publish(context.Context, string, string) error { return store.ErrNotSupported }

// Listen implements store.PubSub: not supported on SQLite.
func (d *Driver) Listen(context.Context, string, func(string)) error { return store.ErrNotSupported }
