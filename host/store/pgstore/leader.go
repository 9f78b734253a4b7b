package pgstore

import (
	"context"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reelforge/reelforge/host/store"
)

// TryLeaderLock implements store.Scheduling with a session advisory lock (pg_try_advisory_lock)
// held on a connection of its own, outside the pool, so the lock lives exactly as long as that
// connection: a host that dies or loses the connection gives the lock up with it.
func (d *Driver) TryLeaderLock(ctx context.Context, name string) (store.LeaderLock, bool, error) {
	conn, err := pgx.ConnectConfig(ctx, d.pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, false, fmt.Errorf("pgstore: leader lock connection: %w", err)
	}
	key := lockKey(name)
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&ok); err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return nil, false, fmt.Errorf("pgstore: leader lock: %w", err)
	}
	if !ok {
		conn.Close(context.WithoutCancel(ctx))
		return nil, false, nil
	}
	return &leaderLock{conn: conn, key: key}, true, nil
}

// lockKey maps a lock name to the 64-bit key advisory locks take.
func lockKey(name string) int64 {
	h := fnv.New64a()
	h.Write([]byte("reelforge:" + name))
	return int64(h.Sum64())
}

type leaderLock struct {
	mu   sync.Mutex
	conn *pgx.Conn
	key  int64
}

// Check pings the lock's connection; the lock is held as long as it answers.
func (l *leaderLock) Check(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		return fmt.Errorf("pgstore: leader lock released")
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := l.conn.Ping(ctx); err != nil {
		return fmt.Errorf("pgstore: leader lock connection: %w", err)
	}
	return nil
}

// Release unlocks and closes the connection.
func (l *leaderLock) Release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = l.conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, l.key) // closing the session releases it too
	l.conn.Close(ctx)
	l.conn = nil
}
