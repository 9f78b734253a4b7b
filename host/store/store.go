// Package store defines the persistence seam of the host: the records it keeps, the method groups
// a database driver implements, and the one way a service opens a transaction.
//
// There are two drivers: pgstore (PostgreSQL through a pgx pool, pgvector when available) and
// sqlitestore (embedded SQLite through the cgo driver mattn/go-sqlite3, built with FTS5). Both
// implement Driver and pass the one conformance suite in storetest.
//
// Driver is the drivers' side, and that of the code that opens a database (host/app, the bench
// programs): the whole database, every method group (Users, Tasks, Runs, Outbox, ...). A service
// never takes a Driver. It declares, in its own package, the store it uses: an interface listing
// only the methods it calls, in the way database/sql/driver names what a database must offer and
// Temporal's persistence managers each name their own slice of the store. For example:
//
//	// Store is what the task service needs of the database.
//	type Store interface {
//		store.Transactor
//		CreateTask(ctx context.Context, t *store.Task) error
//		UpdateTask(ctx context.Context, u store.TaskUpdate) (*store.Task, error)
//		events.Outbox // what events.Emit writes through
//	}
//
// host/app hands the service its Driver, so the compiler checks there that every driver has what
// the service declares, and the service's signature says what it touches.
//
// A service that changes several records at once embeds Transactor and opens the transaction
// through InTx, which hands fn the transaction as the same narrow interface:
//
//	err := store.InTx(ctx, s.st, func(tx Store) error {
//		if err := tx.CreateTask(ctx, t); err != nil {
//			return err
//		}
//		return events.Emit(ctx, tx, ev)
//	})
//
// Code outside host/store never calls Transactor's InTx method itself (internal/layering's test
// checks it): the method hands out the whole Driver, InTx hands out only what the service declared.
package store

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"
)

// Sentinel errors every driver returns.
var (
	ErrNotFound      = errors.New("store: not found")
	ErrConflict      = errors.New("store: conflict")      // a unique key is taken
	ErrStale         = errors.New("store: state changed") // a guarded update found another state
	ErrNotSupported  = errors.New("store: not supported by this driver")
	ErrQuotaExceeded = errors.New("store: quota exceeded") // CreateRunInQuota: the limit is reached
)

// Driver is a database the host can run on.
type Driver interface {
	// Name is "postgres" or "sqlite".
	Name() string
	// Ping checks the database answers.
	Ping(ctx context.Context) error
	// Close releases the pool or file.
	Close() error
	// Now is the store's clock (tests inject one).
	Now() time.Time
	Transactor
	// SupportsVectorSearch reports whether the pgvector path is active.
	SupportsVectorSearch() bool
	// ParallelWrites reports whether write transactions run side by side (PostgreSQL) rather
	// than one at a time (SQLite's single writer), so that writing from several goroutines at
	// once gains anything.
	ParallelWrites() bool

	Users
	APIKeys
	Projects
	Idempotency
	Tasks
	Runs
	Knowledge
	Content
	Outbox
	Scheduling
}

// Transactor is a database that runs a function in a transaction. Every Driver is one; a service's
// own store interface embeds it when the service writes several records at once.
type Transactor interface {
	// InTx runs fn in one transaction: fn's store calls commit together or not at all. Inside a
	// transaction already, fn runs in that one. Services call the function InTx, not this method.
	InTx(ctx context.Context, fn func(tx Driver) error) error
}

// InTx runs fn in one transaction of db: fn's store calls commit together, or none does when fn
// returns an error (which InTx returns). fn sees the transaction as S, the same narrow interface
// the caller holds db as, so code inside a transaction touches no more of the store than code
// outside.
//
// A driver's transaction is a Driver of the same kind as the driver itself, so it is an S whenever
// the driver is; a transaction that is not is a programming error, returned as such.
func InTx[S Transactor](ctx context.Context, db S, fn func(tx S) error) error {
	return db.InTx(ctx, func(tx Driver) error {
		s, ok := tx.(S)
		if !ok {
			return fmt.Errorf("store: a transaction of %T does not implement %v", tx, reflect.TypeFor[S]())
		}
		return fn(s)
	})
}
