package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"sync/atomic"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// walGuard gives back the disk space the WAL took during a write failure. While the disk is full,
// checkpoints cannot finish and the WAL stays at the size it grew to (41 MB of a 50 MB disk in the
// incident of issue 38), so space an operator frees is eaten again by the next writes instead of
// holding the work that waited. Once a write fails for lack of space or an I/O error, the first
// write that succeeds afterwards starts one checkpoint with TRUNCATE, which copies the WAL into the
// database file and cuts it to zero bytes; a checkpoint that could not finish (a reader still on an
// old snapshot) is tried again after the next successful write.
type walGuard struct {
	db      *sql.DB
	dirty   atomic.Bool // a write failed since the last complete checkpoint
	running sync.Mutex  // one checkpoint at a time
}

// saw records a statement's or commit's outcome: err nil is a success.
func (g *walGuard) saw(err error) {
	if g == nil {
		return
	}
	if err != nil {
		if diskTrouble(err) {
			g.dirty.Store(true)
		}
		return
	}
	if !g.dirty.Load() || !g.running.TryLock() {
		return
	}
	// In its own goroutine: the checkpoint waits for the writer lock, which the caller (a
	// transaction's statement) may hold.
	go func() {
		defer g.running.Unlock()
		if !g.dirty.CompareAndSwap(true, false) {
			return
		}
		var busy, logPages, done int
		err := g.db.QueryRowContext(context.Background(), "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logPages, &done)
		if err != nil || busy != 0 {
			g.dirty.Store(true)
		}
	}()
}

// diskTrouble reports whether err is SQLite's disk full or an I/O error: what leaves the WAL
// larger than it needs to be.
func diskTrouble(err error) bool {
	var se sqlite3.Error
	if !errors.As(err, &se) {
		return false
	}
	return se.Code == sqlite3.ErrFull || se.Code == sqlite3.ErrIoErr
}
