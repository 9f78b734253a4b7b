package pgstore

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// migrateRiver applies River's migrations (its river_* tables, beside ours: no name is shared) on
// pool while the caller holds the migration lock on a connection of it: hosts starting together
// take turns, and the next finds them applied. Each version runs in a transaction of its own (one
// adds a value to an enum type and then uses it, which one transaction cannot do). The tables land
// in schema ("": the first of the search path), named explicitly when set: River would otherwise
// find the river_migration table of public through the search path and migrate nothing.
func migrateRiver(ctx context.Context, pool *pgxpool.Pool, schema string, log *slog.Logger) error {
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Logger: log, Schema: schema})
	if err != nil {
		return fmt.Errorf("pgstore: river migrations: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("pgstore: river migrations: %w", err)
	}
	return nil
}

// Schema is the schema the driver's tables are in (Options.Schema; "" for the search path's
// first), for River's client (host/queue).
func (d *Driver) Schema() string { return d.schema }

// PgxTx is the transaction d runs in (a Driver InTx handed over), for a library that writes in
// it, as River inserts a job with the change that makes it (host/queue); nil outside one.
func (d *Driver) PgxTx() pgx.Tx {
	if t, ok := d.DB.Conn().(txConn); ok && d.DB.InTransaction() {
		return t.tx
	}
	return nil
}
