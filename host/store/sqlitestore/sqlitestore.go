// Package sqlitestore is the embedded store driver: SQLite through github.com/mattn/go-sqlite3
// (cgo; the build tag sqlite_fts5 compiles in the keyword index, see fts5_tag.go), in one file
// under the data directory, with WAL, a busy timeout and foreign keys on.
package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/sqldb"
)

// Driver is the SQLite store.
type Driver struct {
	*sqldb.DB
	sqlDB *sql.DB
	reads *readCache             // nil inside a transaction
	df    *sqldb.TermCounts[int] // shared with the drivers of InTx
}

var _ store.Driver = (*Driver)(nil)

// Options configure Open.
type Options struct {
	Clock func() time.Time // nil: time.Now
}

// Open opens (creating when needed) the database file at path and applies the migrations.
func Open(ctx context.Context, path string, opt Options) (*Driver, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("sqlitestore: %w", err)
	}
	// The settings are connPragmas; _txlock and _stmt_cache_size are the driver's own:
	// transactions BEGIN IMMEDIATE, and each connection keeps its 64 most recently used prepared
	// statements, so the same statement is not compiled again every time it runs (an ingest runs
	// a dozen statements a document; compiling them was about a tenth of its CPU time).
	sqlDB, err := sql.Open(driverName, "file:"+path+"?_txlock=immediate&_stmt_cache_size=64")
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: open: %w", err)
	}
	sqlDB.SetMaxOpenConns(8)
	sqlDB.SetMaxIdleConns(8)
	sqlDB.SetConnMaxIdleTime(0)
	d := &Driver{sqlDB: sqlDB, reads: newReadCache(sqlDB), df: newTermCounts()}
	d.DB = sqldb.New(poolConn{dbConn: dbConn{sqlDB}, reads: d.reads}, d.begin, dialect, opt.Clock)
	// The database file belongs to this host process (README: one host per SQLite file), so
	// it sees every write to projects and may keep listing pages.
	d.DB.CacheProjectLists()
	if err := d.Ping(ctx); err != nil {
		sqlDB.Close()
		return nil, err
	}
	// BEGIN IMMEDIATE (see _txlock) makes concurrent migrators take turns.
	if err := d.DB.Migrate(ctx, func(ctx context.Context, tx *sqldb.DB, script string) error {
		_, err := tx.Exec(ctx, script)
		return err
	}); err != nil {
		sqlDB.Close()
		return nil, err
	}
	return d, nil
}

// driverName is go-sqlite3 with connPragmas run on every new connection.
const driverName = "sqlite3_reelforge"

// connPragmas are every connection's settings, in one place (go-sqlite3's DSN knows some of them
// and silently ignores a misspelt one; TestPragmas checks them all). The busy timeout comes
// first, so the switch to WAL waits for a lock like any statement. Reads go through a 256 MB
// memory map, temporary tables stay in memory, and the WAL is copied back into the database file
// once it holds 10,000 pages (40 MB), not the default 1,000: each copy syncs the file, and pages
// written again and again between copies (the keyword index's, a document list's) are copied
// once. An ingest of 400 documents synced 17 times instead of 92.
const connPragmas = `PRAGMA busy_timeout=15000; PRAGMA journal_mode=WAL; PRAGMA foreign_keys=ON;
	PRAGMA synchronous=NORMAL; PRAGMA cache_size=-16000; PRAGMA mmap_size=268435456;
	PRAGMA temp_store=MEMORY; PRAGMA wal_autocheckpoint=10000`

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

func mapError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	var se sqlite3.Error
	if errors.As(err, &se) {
		switch se.ExtendedCode {
		case sqlite3.ErrConstraintUnique, sqlite3.ErrConstraintPrimaryKey:
			return fmt.Errorf("%w: %v", store.ErrConflict, err)
		}
	}
	return err
}

// Name implements store.Driver.
func (d *Driver) Name() string { return "sqlite" }

// Ping implements store.Driver.
func (d *Driver) Ping(ctx context.Context) error {
	if err := d.sqlDB.PingContext(ctx); err != nil {
		return fmt.Errorf("sqlitestore: ping: %w", err)
	}
	return nil
}

// Close implements store.Driver.
func (d *Driver) Close() error {
	if d.sqlDB == nil {
		return nil
	}
	d.reads.close()
	return d.sqlDB.Close()
}

// SupportsVectorSearch implements store.Driver: SQLite scores vectors in memory.
func (d *Driver) SupportsVectorSearch() bool { return false }

// ParallelWrites implements store.Driver: SQLite has one writer at a time.
func (d *Driver) ParallelWrites() bool { return false }

// InTx implements store.Driver.
func (d *Driver) InTx(ctx context.Context, fn func(tx store.Driver) error) error {
	return d.DB.WithTx(ctx, func(tx *sqldb.DB) error {
		return fn(&Driver{DB: tx, sqlDB: nil, df: d.df})
	})
}

func (d *Driver) begin(ctx context.Context) (sqldb.Tx, error) {
	tx, err := d.sqlDB.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	return txConn{tx}, nil
}

type queryer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

type dbConn struct{ q queryer }

func (c dbConn) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	res, err := c.q.ExecContext(ctx, sqldb.RebindSQLite(q), args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (c dbConn) Query(ctx context.Context, q string, args ...any) (sqldb.Rows, error) {
	rows, err := c.q.QueryContext(ctx, sqldb.RebindSQLite(q), args...)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

func (c dbConn) QueryRow(ctx context.Context, q string, args ...any) sqldb.Row {
	return c.q.QueryRowContext(ctx, sqldb.RebindSQLite(q), args...)
}

// poolConn runs statements on the pool and keeps the reads it repeats prepared. Parsing and
// planning a SELECT is most of what SQLite spends on a small listing (a callgrind count of
// BenchmarkListProjects put the parser and code generator above the row reads), so a prepared
// statement per query text saves it on every call after the first.
//
// Only reads outside transactions are cached. Caches that also prepared writes and statements
// inside transactions made concurrent writers fail with SQLITE_BUSY, twice (the first session's,
// and one of the third that prepared only a transaction's writes, through Tx.StmtContext: host/runs'
// lease tests caught it); a reset read statement holds no lock, and database/sql resets it when
// the rows close.
type poolConn struct {
	dbConn
	reads *readCache
}

// Query and QueryRow rebind once and call database/sql directly (dbConn's methods would
// rebind the rebound text again).
func (c poolConn) Query(ctx context.Context, q string, args ...any) (sqldb.Rows, error) {
	q = sqldb.RebindSQLite(q)
	var rows *sql.Rows
	var err error
	if st := c.reads.get(ctx, q); st != nil {
		rows, err = st.QueryContext(ctx, args...)
	} else {
		rows, err = c.q.QueryContext(ctx, q, args...)
	}
	if err != nil {
		return nil, err
	}
	return rows, nil
}

func (c poolConn) QueryRow(ctx context.Context, q string, args ...any) sqldb.Row {
	q = sqldb.RebindSQLite(q)
	if st := c.reads.get(ctx, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return c.q.QueryRowContext(ctx, q, args...)
}

// readCache holds the prepared SELECTs, at most readCacheMax of them (later texts run
// unprepared). The host's query texts are nearly a fixed set: values are bound, except the
// projects listing's LIMIT and OFFSET (a page size and offset per text) and lists of values
// (kept out, see readCacheMaxParams).
type readCache struct {
	db *sql.DB
	mu sync.RWMutex
	m  map[string]*sql.Stmt
}

const readCacheMax = 256

// readCacheMaxParams keeps out queries built around lists of values (IN (?1, ?2, ...)): each
// length is another text, and a few of them would fill the cache.
const readCacheMaxParams = 16

func newReadCache(db *sql.DB) *readCache { return &readCache{db: db, m: map[string]*sql.Stmt{}} }

// get returns the prepared statement of q, or nil when q is not a single SELECT or the cache is
// full (the caller then runs q unprepared).
func (c *readCache) get(ctx context.Context, q string) *sql.Stmt {
	c.mu.RLock()
	st, n := c.m[q], len(c.m)
	c.mu.RUnlock()
	if st != nil || n >= readCacheMax || strings.Count(q, "?") > readCacheMaxParams || !isSelect(q) {
		return st
	}
	prepared, err := c.db.PrepareContext(ctx, q)
	if err != nil {
		return nil // the unprepared call reports the error
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.m[q]; old != nil {
		prepared.Close()
		return old
	}
	c.m[strings.Clone(q)] = prepared
	return prepared
}

func (c *readCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for q, st := range c.m {
		st.Close()
		delete(c.m, q)
	}
}

// isSelect reports whether q is one read-only statement (WITH ... SELECT included; a
// RETURNING clause would make it a write).
func isSelect(q string) bool {
	q = strings.TrimSpace(q)
	if len(q) < 6 || strings.Contains(q, ";") {
		return false
	}
	head := strings.ToUpper(q[:6])
	if head != "SELECT" && !strings.HasPrefix(head, "WITH") {
		return false
	}
	upper := strings.ToUpper(q)
	for _, w := range []string{"INSERT ", "UPDATE ", "DELETE ", "RETURNING"} {
		if strings.Contains(upper, w) {
			return false
		}
	}
	return true
}

type txConn struct{ tx *sql.Tx }

func (t txConn) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	return dbConn{t.tx}.Exec(ctx, q, args...)
}
func (t txConn) Query(ctx context.Context, q string, args ...any) (sqldb.Rows, error) {
	return dbConn{t.tx}.Query(ctx, q, args...)
}
func (t txConn) QueryRow(ctx context.Context, q string, args ...any) sqldb.Row {
	return dbConn{t.tx}.QueryRow(ctx, q, args...)
}
func (t txConn) Commit(context.Context) error   { return t.tx.Commit() }
func (t txConn) Rollback(context.Context) error { return t.tx.Rollback() }

var _ store.PubSub = (*Driver)(nil)

// Publish implements store.PubSub: SQLite serves one host, there is no one to tell.
func (d *Driver) Publish(context.Context, string, string) error { return store.ErrNotSupported }

// Listen implements store.PubSub: not supported on SQLite.
func (d *Driver) Listen(context.Context, string, func(string)) error { return store.ErrNotSupported }
