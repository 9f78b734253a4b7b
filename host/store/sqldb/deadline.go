package sqldb

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/reelforge/reelforge/host/store"
)

// A database call that does not answer must not hold its caller for ever: a paused or
// unreachable server, a pool with no connection free, a SQLite lock held too long. Every call
// through DB (Exec, Query, QueryRow, a transaction's commit) runs under a deadline, the store's
// timeout (DB_TIMEOUT_MS) unless the context asks for another (store.WithCallTimeout: migrations,
// the indexer). A call that runs out of it fails with a store.Fault (CauseTimeout), which the API
// answers 503 with Retry-After; the caller's own cancellation stays context.Canceled.

// SetTimeout sets the per-call deadline of db and of the transactions it begins; 0: none.
func (db *DB) SetTimeout(d time.Duration) { db.timeout = d }

// Timeout is the per-call deadline SetTimeout set.
func (db *DB) Timeout() time.Duration { return db.timeout }

// bound derives the context one call runs under.
func (db *DB) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	t := store.CallTimeout(ctx, db.timeout)
	if t <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, t)
}

// fail maps the error of a call made under bctx (bound from ctx): the store's deadline expiring,
// while the caller still waits, is a timeout Fault; anything else goes through the driver's
// mapping. A disk-full Fault is remembered for WriteFault.
func (db *DB) fail(ctx, bctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() == nil && errors.Is(bctx.Err(), context.DeadlineExceeded) && store.FaultOf(err) == nil {
		err = &store.Fault{Cause: store.CauseTimeout, Err: err}
	} else {
		err = db.D.MapError(err)
	}
	if f := store.FaultOf(err); f != nil {
		if f.Cause == store.CauseFull && db.faults != nil {
			db.faults.full.Store(f)
		}
		if f.Cause != store.CauseBusy {
			store.LatchFault(ctx, f, db.timeout)
		}
	}
	return err
}

// latched is the Fault an earlier call under ctx met (store.WithFaultLatch), for the calls that
// would wait for the same silent database again.
func latched(ctx context.Context) error {
	if f := store.LatchedFault(ctx); f != nil {
		return f
	}
	return nil
}

// Bounded runs fn, a call of the driver's own (a pool's Begin, a batch), under the store's
// deadline, mapping its error as DB's calls are.
func (db *DB) Bounded(ctx context.Context, fn func(ctx context.Context) error) error {
	if err := latched(ctx); err != nil {
		return err
	}
	bctx, cancel := db.bound(ctx)
	defer cancel()
	return db.fail(ctx, bctx, fn(bctx))
}

// faults is what the DBs over one database (the pool's and each transaction's) remember of its
// failures.
type faults struct {
	full atomic.Pointer[store.Fault] // the last write that failed for a full disk; nil once one succeeds
}

// wrote clears a remembered disk-full failure: a write went through.
func (db *DB) wrote() {
	if db.faults != nil && db.faults.full.Load() != nil {
		db.faults.full.Store(nil)
	}
}

// WriteFault implements store.FaultReporter: the disk-full Fault of the last failed write, until a
// write succeeds.
func (db *DB) WriteFault() *store.Fault {
	if db.faults == nil {
		return nil
	}
	return db.faults.full.Load()
}

// boundRows ends its call's deadline when closed, and maps its error like the call's.
type boundRows struct {
	Rows
	db        *DB
	ctx, bctx context.Context
	cancel    context.CancelFunc
}

func (r boundRows) Close() error {
	err := r.Rows.Close()
	r.cancel()
	return err
}

func (r boundRows) Err() error { return r.db.fail(r.ctx, r.bctx, r.Rows.Err()) }

func (r boundRows) Scan(dest ...any) error { return r.db.fail(r.ctx, r.bctx, r.Rows.Scan(dest...)) }
