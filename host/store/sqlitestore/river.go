package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"

	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
)

// migrateRiver applies River's migrations (its river_* tables, beside ours: no name is shared) in
// one transaction, which BEGIN IMMEDIATE makes the migration lock: migrators take turns, and the
// second finds them applied.
func migrateRiver(ctx context.Context, db *sql.DB, log *slog.Logger) error {
	m, err := rivermigrate.New(riversqlite.New(nil), &rivermigrate.Config{Logger: log})
	if err != nil {
		return fmt.Errorf("sqlitestore: river migrations: %w", err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlitestore: river migrations: %w", mapError(err))
	}
	defer func() { _ = tx.Rollback() }() // after Commit: sql.ErrTxDone, nothing to undo
	// Deprecated because some PostgreSQL versions cannot share one transaction (pgstore applies
	// them one by one); on SQLite the transaction is what makes migrators take turns (there is no
	// lock outside one), and River's SQLite versions apply together (TestMigrationsWhenHostsStartTogether).
	//lint:ignore SA1019 one BEGIN IMMEDIATE transaction is SQLite's migration lock
	if _, err := m.MigrateTx(ctx, tx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("sqlitestore: river migrations: %w", mapError(err))
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlitestore: river migrations: %w", mapError(err))
	}
	return nil
}

// SQLTx is the transaction d runs in (a Driver InTx handed over), for a library that writes in
// it, as River inserts a job with the change that makes it (host/queue); nil outside one.
func (d *Driver) SQLTx() *sql.Tx {
	if t, ok := d.DB.Conn().(txConn); ok {
		return t.tx
	}
	return nil
}
