package store

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrUnavailable matches (errors.Is) a Fault of a database that cannot serve for now: it cannot be
// reached, has no connection free, is read-only, is busy, or did not answer within the call's
// deadline. ErrFull matches a Fault of a database whose disk is full. The API answers the first
// 503 RESOURCE_EXHAUSTED and the second 507 STORAGE_FULL, both with Retry-After; background loops
// back off on either.
var (
	ErrUnavailable = errors.New("store: database unavailable")
	ErrFull        = errors.New("store: database storage full")
)

// The causes of a Fault, as /health names them.
const (
	CauseUnreachable = "unreachable"
	CauseConnections = "out of connections"
	CauseReadOnly    = "read-only"
	CauseFull        = "full"
	CauseIO          = "I/O error" // SQLite: the file system refused a read or write
	CauseBusy        = "busy"      // SQLite: another writer held the lock past the busy timeout
	CauseTimeout     = "timeout"   // no answer within the call's deadline (DB_TIMEOUT_MS)
)

// Fault is a database error that says nothing of the request and everything of the database:
// retrying later may succeed. Each driver's error mapping (its Dialect.MapError) makes one from
// its own errors (SQLSTATEs, refused connections, SQLite result codes), so the classification is
// in one place per driver and the callers test only errors.Is(err, ErrUnavailable / ErrFull).
type Fault struct {
	Cause string
	Err   error
}

func (f *Fault) Error() string {
	if f.Err == nil {
		return "store: database " + f.Cause
	}
	return "store: database " + f.Cause + ": " + f.Err.Error()
}

func (f *Fault) Unwrap() error { return f.Err }

// Is makes a Fault match ErrFull (its cause is a full disk) or ErrUnavailable (any other cause).
func (f *Fault) Is(target error) bool {
	if f.Cause == CauseFull {
		return target == ErrFull
	}
	return target == ErrUnavailable
}

// FaultOf returns the Fault in err's chain, or nil.
func FaultOf(err error) *Fault {
	var f *Fault
	if errors.As(err, &f) {
		return f
	}
	return nil
}

// FaultReporter is a driver that remembers a disk-full failure of a write until a later write
// succeeds: /health reports it, since a read (Ping) still works on a full disk.
type FaultReporter interface {
	WriteFault() *Fault
}

type callTimeoutKey struct{}

// WithCallTimeout returns a context under which each database call may take up to d instead of
// the store's default deadline (DB_TIMEOUT_MS): migrations and the knowledge indexer, whose
// statements are long by nature. d <= 0 lifts the deadline.
func WithCallTimeout(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, callTimeoutKey{}, d)
}

// CallTimeout is the per-call deadline ctx asks for (WithCallTimeout), else def.
func CallTimeout(ctx context.Context, def time.Duration) time.Duration {
	if d, ok := ctx.Value(callTimeoutKey{}).(time.Duration); ok {
		return d
	}
	return def
}

// faultLatch remembers the first Fault of the calls made under one context (a request).
type faultLatch struct {
	mu    sync.Mutex
	fault *Fault
	until time.Time
}

type faultLatchKey struct{}

// WithFaultLatch returns a context whose database calls stop waiting once one of them met a
// Fault: for the next hold, each further call fails at once with that Fault. A request that
// found its database silent answers 503 after one deadline, not after one per call it would
// have made (its clean-up writes included); hold bounds it, so work that outlives the request
// with its context is not failed beyond it.
func WithFaultLatch(ctx context.Context) context.Context {
	return context.WithValue(ctx, faultLatchKey{}, &faultLatch{})
}

// LatchedFault is the Fault ctx's latch holds, if it holds one still.
func LatchedFault(ctx context.Context) *Fault {
	l, ok := ctx.Value(faultLatchKey{}).(*faultLatch)
	if !ok {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fault == nil || time.Now().After(l.until) {
		return nil
	}
	return l.fault
}

// LatchFault records f in ctx's latch (if it has one) for hold.
func LatchFault(ctx context.Context, f *Fault, hold time.Duration) {
	l, ok := ctx.Value(faultLatchKey{}).(*faultLatch)
	if !ok || f == nil || hold <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fault == nil || time.Now().After(l.until) {
		l.fault, l.until = f, time.Now().Add(hold)
	}
}
