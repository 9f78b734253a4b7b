// Package sqlitestore is the embedded store driver: SQLite through the pure-Go modernc.org/sqlite,
// in one file under the data directory, with WAL, a busy timeout and foreign keys on.
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

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/sqldb"
)

// Driver is the SQLite store.
type Driver struct {
	*sqldb.DB
	sqlDB *sql.DB
	stmts *stmtCache
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
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(15000)&_pragma=foreign_keys(1)" +
		"&_pragma=synchronous(NORMAL)&_pragma=mmap_size(268435456)&_pragma=cache_size(-16000)&_pragma=temp_store(memory)&_txlock=immediate"
	sqlDB, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: open: %w", err)
	}
	sqlDB.SetMaxOpenConns(8)
	sqlDB.SetMaxIdleConns(8)
	sqlDB.SetConnMaxIdleTime(0)
	d := &Driver{sqlDB: sqlDB, stmts: newStmtCache(sqlDB)}
	d.DB = sqldb.New(dbConn{q: sqlDB, stmts: d.stmts}, d.begin, dialect, opt.Clock)
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
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
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
	return d.sqlDB.Close()
}

// SupportsVectorSearch implements store.Driver: SQLite scores vectors in memory.
func (d *Driver) SupportsVectorSearch() bool { return false }

// InTx implements store.Driver.
func (d *Driver) InTx(ctx context.Context, fn func(tx store.Driver) error) error {
	return d.DB.WithTx(ctx, func(tx *sqldb.DB) error {
		return fn(&Driver{DB: tx, sqlDB: nil, stmts: d.stmts})
	})
}

func (d *Driver) begin(ctx context.Context) (sqldb.Tx, error) {
	tx, err := d.sqlDB.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	return txConn{tx: tx, stmts: d.stmts}, nil
}

type queryer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// stmtCache keeps prepared statements of the queries the host repeats, so SQLite parses each
// once instead of on every call (the parse showed as a tenth of a request's time). It holds at
// most stmtCacheMax statements; queries beyond that run unprepared.
type stmtCache struct {
	db *sql.DB
	mu sync.RWMutex
	m  map[string]*sql.Stmt
}

const stmtCacheMax = 512

func newStmtCache(db *sql.DB) *stmtCache { return &stmtCache{db: db, m: map[string]*sql.Stmt{}} }

// get returns the prepared statement of q, or nil when it cannot or should not be cached.
func (c *stmtCache) get(ctx context.Context, q string) *sql.Stmt {
	if c == nil || strings.Contains(q, ";") { // scripts (migrations) run unprepared, whole
		return nil
	}
	c.mu.RLock()
	st := c.m[q]
	n := len(c.m)
	c.mu.RUnlock()
	if st != nil || n >= stmtCacheMax {
		return st
	}
	prepared, err := c.db.PrepareContext(ctx, q)
	if err != nil {
		return nil // let the plain call report the error
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.m[q]; old != nil {
		prepared.Close()
		return old
	}
	c.m[q] = prepared
	return prepared
}

type dbConn struct {
	q     queryer
	stmts *stmtCache
}

func (c dbConn) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	q = sqldb.RebindSQLite(q)
	var res sql.Result
	var err error
	if st := c.stmts.get(ctx, q); st != nil {
		res, err = st.ExecContext(ctx, args...)
	} else {
		res, err = c.q.ExecContext(ctx, q, args...)
	}
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (c dbConn) Query(ctx context.Context, q string, args ...any) (sqldb.Rows, error) {
	q = sqldb.RebindSQLite(q)
	var rows *sql.Rows
	var err error
	if st := c.stmts.get(ctx, q); st != nil {
		rows, err = st.QueryContext(ctx, args...)
	} else {
		rows, err = c.q.QueryContext(ctx, q, args...)
	}
	if err != nil {
		return nil, err
	}
	return rows, nil
}

func (c dbConn) QueryRow(ctx context.Context, q string, args ...any) sqldb.Row {
	q = sqldb.RebindSQLite(q)
	if st := c.stmts.get(ctx, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return c.q.QueryRowContext(ctx, q, args...)
}

// txConn runs statements in a transaction; cached statements are bound to it with tx.Stmt.
type txConn struct {
	tx    *sql.Tx
	stmts *stmtCache
}

func (t txConn) conn(ctx context.Context, q string) (queryer, string) {
	q = sqldb.RebindSQLite(q)
	if st := t.stmts.get(ctx, q); st != nil {
		return txStmt{t.tx.StmtContext(ctx, st)}, q
	}
	return t.tx, q
}

func (t txConn) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	c, q := t.conn(ctx, q)
	res, err := c.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (t txConn) Query(ctx context.Context, q string, args ...any) (sqldb.Rows, error) {
	c, q := t.conn(ctx, q)
	rows, err := c.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

func (t txConn) QueryRow(ctx context.Context, q string, args ...any) sqldb.Row {
	c, q := t.conn(ctx, q)
	return c.QueryRowContext(ctx, q, args...)
}

func (t txConn) Commit(context.Context) error   { return t.tx.Commit() }
func (t txConn) Rollback(context.Context) error { return t.tx.Rollback() }

// txStmt adapts a transaction-bound statement to queryer (the query text is already in it).
type txStmt struct{ st *sql.Stmt }

func (s txStmt) ExecContext(ctx context.Context, _ string, args ...any) (sql.Result, error) {
	return s.st.ExecContext(ctx, args...)
}
func (s txStmt) QueryContext(ctx context.Context, _ string, args ...any) (*sql.Rows, error) {
	return s.st.QueryContext(ctx, args...)
}
func (s txStmt) QueryRowContext(ctx context.Context, _ string, args ...any) *sql.Row {
	return s.st.QueryRowContext(ctx, args...)
}
