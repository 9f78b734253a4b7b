package pgstore

import "github.com/reelforge/reelforge/host/store"

var _ store.Stats = (*Driver)(nil)

// PoolStats implements store.Stats from the pgx pool's Stat.
func (d *Driver) PoolStats() store.PoolStats {
	st := d.pool.Stat()
	return store.PoolStats{
		MaxOpen:      int(st.MaxConns()),
		Open:         int(st.TotalConns()),
		InUse:        int(st.AcquiredConns()),
		Idle:         int(st.IdleConns()),
		WaitCount:    st.EmptyAcquireCount(),
		WaitDuration: st.EmptyAcquireWaitTime(),
	}
}
