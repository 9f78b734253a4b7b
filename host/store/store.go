// Package store defines the persistence interface of the host and the records it stores.
//
// There are two drivers: pgstore (PostgreSQL through a pgx pool, pgvector when available) and
// sqlitestore (embedded, pure Go). Both pass the one conformance suite in storetest. Consumers
// define the small interfaces they need; Driver is the seam between the host and a database.
package store

import (
	"context"
	"errors"
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
	// InTx runs fn in one transaction: fn's store calls commit together or not at all.
	InTx(ctx context.Context, fn func(tx Driver) error) error
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
