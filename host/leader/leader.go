// Package leader elects the one host of a cluster that runs the cluster-wide timers: the
// scheduler's tick (host/scheduler), the job sweeper (host/runs) and the time-driven events
// (host/events). Leadership is the store's leader lock: on PostgreSQL an advisory lock held on a
// connection of its own, on SQLite always granted (one host per database file).
package leader

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/internal/backoff"
)

// Name is the lock the host's leader holds.
const Name = "scheduler-leader"

// Store is what a Leader needs of the database.
type Store interface {
	TryLeaderLock(ctx context.Context, name string) (lock store.LeaderLock, ok bool, err error)
}

// Leader holds the named leader lock while it can. It is safe for concurrent use.
type Leader struct {
	st   Store
	name string
	log  *slog.Logger

	mu    sync.Mutex
	lock  store.LeaderLock // nil while another host leads
	retry backoff.Retry    // the back-off of failed attempts at the lock, and their log (under mu)
	next  time.Time        // no attempt before this, after a failed one (under mu)
}

// New returns the Leader of lock name over st (log nil: discarded). It takes the lock at its
// first IsLeader.
func New(st Store, name string, log *slog.Logger) *Leader {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Leader{st: st, name: name, log: log, retry: backoff.Retry{Log: log, What: "leader: take the lock"}}
}

// IsLeader reports whether this host holds the lock, taking it when free. A lock whose connection
// broke is given up and taken again when possible.
func (l *Leader) IsLeader(ctx context.Context) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lock != nil {
		if err := l.lock.Check(ctx); err == nil {
			return true
		}
		l.lock.Release()
		l.lock = nil
		l.log.Warn("leader: lock lost", "lock", l.name)
	}
	// The callers' loops (the scheduler's tick, the sweeper every second, the time-driven events)
	// see only "not the leader", so they do not back off: the attempts back off here. Each opens
	// a connection, which a server out of connections would have to refuse once a second per
	// host (PostgreSQL killed for 60 s: 62 attempts).
	if time.Now().Before(l.next) {
		return false
	}
	lock, ok, err := l.st.TryLeaderLock(ctx, l.name)
	if err != nil {
		l.next = time.Now().Add(l.retry.Failed(err, "lock", l.name))
		return false
	}
	l.retry.Succeeded()
	if ok {
		l.lock = lock
	}
	return ok
}

// Release gives the lock up (at shutdown), so another host leads at once.
func (l *Leader) Release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lock != nil {
		l.lock.Release()
		l.lock = nil
	}
}
