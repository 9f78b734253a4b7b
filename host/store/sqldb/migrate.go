package sqldb

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Migration is one schema version: the shared file and, when present, the driver's companion.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Migrations returns the versioned migrations for a dialect, in order. In the shared files the
// tokens __JSON__, __TS__ and __BLOB__ become the dialect's types.
func Migrations(dialect string) ([]Migration, error) {
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		return nil, err
	}
	types := map[string][3]string{
		"postgres": {"JSONB", "TIMESTAMPTZ", "BYTEA"},
		"sqlite":   {"TEXT", "TEXT", "BLOB"},
	}[dialect]
	byVersion := map[int]*Migration{}
	for _, e := range entries {
		name := e.Name()
		base := strings.TrimSuffix(name, ".sql")
		parts := strings.SplitN(base, ".", 2)
		if len(parts) == 2 && parts[1] != dialect {
			continue // another driver's companion
		}
		num, _, _ := strings.Cut(parts[0], "_")
		v, err := strconv.Atoi(num)
		if err != nil {
			return nil, fmt.Errorf("store: migration %s: name must start with a number", name)
		}
		b, err := migrationFS.ReadFile("migrations/" + name)
		if err != nil {
			return nil, err
		}
		sql := strings.NewReplacer("__JSON__", types[0], "__TS__", types[1], "__BLOB__", types[2]).Replace(string(b))
		m := byVersion[v]
		if m == nil {
			m = &Migration{Version: v, Name: parts[0]}
			byVersion[v] = m
		}
		if len(parts) == 2 {
			m.SQL += "\n" + sql // the companion runs after the shared file
		} else {
			m.SQL = sql + m.SQL
		}
	}
	out := make([]Migration, 0, len(byVersion))
	for _, m := range byVersion {
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// Migrate applies the migrations db lacks, each in its own transaction, recording them in
// schema_migrations. The caller holds the driver's migration lock. exec runs a multi-statement
// script (drivers differ in how).
func (db *DB) Migrate(ctx context.Context, exec func(ctx context.Context, tx *DB, script string) error) error {
	if _, err := db.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`); err != nil {
		return fmt.Errorf("store: migrations table: %w", err)
	}
	migs, err := Migrations(db.D.Name)
	if err != nil {
		return err
	}
	applied := map[int]bool{}
	rows, err := db.Query(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return fmt.Errorf("store: read migrations: %w", err)
	}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return err
		}
		applied[v] = true
	}
	rows.Close()
	for _, m := range migs {
		if applied[m.Version] {
			continue
		}
		err := db.WithTx(ctx, func(tx *DB) error {
			// Read again under the transaction's lock: on SQLite, where BEGIN IMMEDIATE is the
			// migration lock, another migrator may have applied it since the listing above.
			var done int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM schema_migrations WHERE version = $1`, m.Version).Scan(&done); err != nil {
				return fmt.Errorf("store: read migrations: %w", err)
			}
			if done > 0 {
				return nil
			}
			if err := exec(ctx, tx, m.SQL); err != nil {
				return fmt.Errorf("store: migration %s: %w", m.Name, err)
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
				m.Version, m.Name, db.Now().Format(SQLiteTimeFormat))
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}
