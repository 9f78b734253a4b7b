package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/pgstore"
	"github.com/reelforge/reelforge/host/store/sqlitestore"
)

// benchStore opens a fresh store of one driver for a measurement; done closes it and removes what
// it made.
type benchStore struct {
	name string
	open func() (st store.Driver, done func(), err error)
}

// benchStores are SQLite in a temporary folder and, with a PostgreSQL URL, PostgreSQL in a
// throw-away schema (prefix_<nanoseconds>): each open makes a new, empty store.
func benchStores(ctx context.Context, o *options, prefix string) []benchStore {
	out := []benchStore{{"sqlite", func() (store.Driver, func(), error) {
		dir, err := os.MkdirTemp("", prefix+"-")
		if err != nil {
			return nil, nil, err
		}
		d, err := sqlitestore.Open(ctx, filepath.Join(dir, "bench.db"), sqlitestore.Options{})
		if err != nil {
			os.RemoveAll(dir)
			return nil, nil, err
		}
		return d, func() { d.Close(); os.RemoveAll(dir) }, nil
	}}}
	if o.pgURL != "" {
		out = append(out, benchStore{"postgres", func() (store.Driver, func(), error) {
			schema := fmt.Sprintf("%s_%d", prefix, time.Now().UnixNano())
			d, err := pgstore.Open(ctx, o.pgURL, pgstore.Options{Schema: schema})
			if err != nil {
				dropSchema(ctx, o.pgURL, schema)
				return nil, nil, err
			}
			return d, func() { d.Close(); dropSchema(ctx, o.pgURL, schema) }, nil
		}})
	}
	return out
}

// dropSchema drops a bench's throw-away schema, if it can: what was measured does not depend on it.
func dropSchema(ctx context.Context, pgURL, schema string) {
	ctx = context.WithoutCancel(ctx)
	c, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		return
	}
	_, _ = c.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
	c.Close(ctx)
}
