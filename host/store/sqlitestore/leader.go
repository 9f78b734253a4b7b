package sqlitestore

import (
	"context"

	"github.com/reelforge/reelforge/host/store"
)

// TryLeaderLock implements store.Scheduling: one host serves a SQLite file, so it always leads.
func (d *Driver) TryLeaderLock(context.Context, string) (store.LeaderLock, bool, error) {
	return soleLeader{}, true, nil
}

type soleLeader struct{}

func (soleLeader) Check(context.Context) error { return nil }
func (soleLeader) Release()                    {}
