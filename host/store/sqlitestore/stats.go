package sqlitestore

import "github.com/reelforge/reelforge/host/store"

var _ store.Stats = (*Driver)(nil)

// PoolStats implements store.Stats from database/sql's DBStats.
func (d *Driver) PoolStats() store.PoolStats {
	if d.sqlDB == nil { // a transaction's view of the driver
		return store.PoolStats{}
	}
	st := d.sqlDB.Stats()
	return store.PoolStats{
		MaxOpen:      st.MaxOpenConnections,
		Open:         st.OpenConnections,
		InUse:        st.InUse,
		Idle:         st.Idle,
		WaitCount:    st.WaitCount,
		WaitDuration: st.WaitDuration,
	}
}
