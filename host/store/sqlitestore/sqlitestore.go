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
	df    *dfCache // shared with the drivers of InTx
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
	d := &Driver{sqlDB: sqlDB, df: &dfCache{}}
	d.DB = sqldb.New(dbConn{sqlDB}, d.begin, dialect, opt.Clock)
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
