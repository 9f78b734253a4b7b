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
	stmts *stmtCache             // nil inside a transaction
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
	// The WAL is copied back into the database file once it holds 10,000 pages (40 MB), not the
	// default 1,000: each copy syncs the file, and pages written again and again between copies
	// (the keyword index's, a document list's) are copied once. An ingest of 400 documents
	// synced 17 times instead of 92.
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(15000)&_pragma=foreign_keys(1)" +
		"&_pragma=synchronous(NORMAL)&_pragma=mmap_size(268435456)&_pragma=cache_size(-16000)&_pragma=temp_store(memory)" +
		"&_pragma=wal_autocheckpoint(10000)&_txlock=immediate"
	sqlDB, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: open: %w", err)
	}
	sqlDB.SetMaxOpenConns(8)
	sqlDB.SetMaxIdleConns(8)
	sqlDB.SetConnMaxIdleTime(0)
	d := &Driver{sqlDB: sqlDB, stmts: newStmtCache(sqlDB), df: newTermCounts()}
	d.DB = sqldb.New(poolConn{dbConn: dbConn{sqlDB}, stmts: d.stmts}, d.begin, dialect, opt.Clock)
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
	d.stmts.close()
	return d.sqlDB.Close()
}

// SupportsVectorSearch implements store.Driver: SQLite scores vectors in memory.
func (d *Driver) SupportsVectorSearch() bool { return false }

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
	return txConn{tx: tx, stmts: d.stmts}, nil
}

type queryer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

type dbConn struct{ q queryer }

func (c dbConn) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	return c.exec(ctx, sqldb.RebindSQLite(q), args...)
}

// exec runs the rebound text q.
func (c dbConn) exec(ctx context.Context, q string, args ...any) (int64, error) {
	res, err := c.q.ExecContext(ctx, q, args...)
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
// Outside transactions only reads are cached: a reset read statement holds no lock, and
// database/sql resets it when the rows close. Writes outside a transaction run unprepared (an
// earlier cache that prepared them made concurrent writers fail with SQLITE_BUSY). Inside a
// transaction txConn uses the same statements, bound to the transaction's connection.
type poolConn struct {
	dbConn
	stmts *stmtCache
}

// Query and QueryRow rebind once and call database/sql directly (dbConn's methods would
// rebind the rebound text again).
func (c poolConn) Query(ctx context.Context, q string, args ...any) (sqldb.Rows, error) {
	q = sqldb.RebindSQLite(q)
	var rows *sql.Rows
	var err error
	if st := c.stmts.get(ctx, q, false); st != nil {
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
	if st := c.stmts.get(ctx, q, false); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return c.q.QueryRowContext(ctx, q, args...)
}

// stmtCache holds prepared statements, at most stmtCacheMax of them (later texts run
// unprepared). The host's query texts are nearly a fixed set: values are bound, except the
// projects listing's LIMIT and OFFSET (a page size and offset per text) and lists of values
// (kept out, see stmtCacheMaxParams). database/sql prepares a statement once per pooled
// connection it runs on, a transaction's included (Tx.StmtContext).
type stmtCache struct {
	db *sql.DB
	mu sync.RWMutex
	m  map[string]cachedStmt
}

type cachedStmt struct {
	st   *sql.Stmt
	read bool // a single SELECT, which may also run outside transactions
}

const stmtCacheMax = 256

// stmtCacheMaxParams keeps out queries built around lists of values (IN (?1, ?2, ...)): each
// length is another text, and a few of them would fill the cache.
const stmtCacheMaxParams = 16

func newStmtCache(db *sql.DB) *stmtCache { return &stmtCache{db: db, m: map[string]cachedStmt{}} }

// get returns the prepared statement of q, or nil when q may not be cached or the cache is
// full (the caller then runs q unprepared). Outside a transaction (inTx false) only single
// SELECTs are; inside one, any single statement.
func (c *stmtCache) get(ctx context.Context, q string, inTx bool) *sql.Stmt {
	if c == nil {
		return nil
	}
	c.mu.RLock()
	cs, ok := c.m[q]
	n := len(c.m)
	c.mu.RUnlock()
	if ok {
		if !inTx && !cs.read {
			return nil
		}
		return cs.st
	}
	read := isSelect(q)
	if n >= stmtCacheMax || strings.Count(q, "?") > stmtCacheMaxParams || strings.Contains(q, ";") || (!inTx && !read) {
		return nil
	}
	prepared, err := c.db.PrepareContext(ctx, q)
	if err != nil {
		return nil // the unprepared call reports the error
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[q]; ok {
		prepared.Close()
		return old.st
	}
	c.m[strings.Clone(q)] = cachedStmt{st: prepared, read: read}
	return prepared
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for q, cs := range c.m {
		cs.st.Close()
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

// txConn runs a transaction's statements on its connection, prepared through the driver's
// stmtCache: ingest and the other write paths repeat the same few texts many times.
type txConn struct {
	tx    *sql.Tx
	stmts *stmtCache
}

// stmt is the cached statement of the rebound text q for this transaction, or nil.
func (t txConn) stmt(ctx context.Context, q string) *sql.Stmt {
	if st := t.stmts.get(ctx, q, true); st != nil {
		return t.tx.StmtContext(ctx, st)
	}
	return nil
}

func (t txConn) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	q = sqldb.RebindSQLite(q)
	st := t.stmt(ctx, q)
	if st == nil {
		return dbConn{t.tx}.exec(ctx, q, args...)
	}
	defer st.Close() // the transaction's copy; the cached statement stays
	res, err := st.ExecContext(ctx, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// Query and QueryRow leave the transaction's copy of a statement open (the rows use it); the
// transaction closes it when it ends.
func (t txConn) Query(ctx context.Context, q string, args ...any) (sqldb.Rows, error) {
	q = sqldb.RebindSQLite(q)
	if st := t.stmt(ctx, q); st != nil {
		rows, err := st.QueryContext(ctx, args...)
		if err != nil {
			return nil, err
		}
		return rows, nil
	}
	rows, err := t.tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

func (t txConn) QueryRow(ctx context.Context, q string, args ...any) sqldb.Row {
	q = sqldb.RebindSQLite(q)
	if st := t.stmt(ctx, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return t.tx.QueryRowContext(ctx, q, args...)
}
func (t txConn) Commit(context.Context) error   { return t.tx.Commit() }
func (t txConn) Rollback(context.Context) error { return t.tx.Rollback() }

var _ store.PubSub = (*Driver)(nil)

// Publish implements store.PubSub: SQLite serves one host, there is no one to tell.
func (d *Driver) Publish(context.Context, string, string) error { return store.ErrNotSupported }

// Listen implements store.PubSub: not supported on SQLite.
func (d *Driver) Listen(context.Context, string, func(string)) error { return store.ErrNotSupported }
