package sqlitestore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/sqldb"
	"github.com/reelforge/reelforge/host/store/sqlitestore"
	"github.com/reelforge/reelforge/host/store/storetest"
	"github.com/reelforge/reelforge/internal/testtool"
	"github.com/reelforge/reelforge/internal/tmpfs"
)

// TestDiskFull: on a full disk a run claim fails (it does not hand back a row whose write did not
// commit), the runs stay unclaimed, and once space is freed the claim succeeds and the WAL, grown
// while the disk filled, is cut back so the freed space stays free.
func TestDiskFull(t *testing.T) {
	ctx := context.Background()
	dir := tmpfs.Mount(t, 40<<20)
	path := filepath.Join(dir, "reelforge.db")
	d, err := sqlitestore.Open(ctx, path, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	u := storetest.NewUser(t, d, "")
	var runs []string
	for range 5 {
		r := &store.Run{ID: uuid.NewString(), WorkflowID: "wf", UserID: u.ID}
		if err := d.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r.ID)
	}
	// A run no claim takes (completed), for fillToLastPage to write to.
	mark := &store.Run{ID: uuid.NewString(), WorkflowID: "mark", UserID: u.ID, Status: store.RunCompleted}
	if err := d.CreateRun(ctx, mark); err != nil {
		t.Fatal(err)
	}
	// Room to give back later (enough for a checkpoint to copy the WAL into the database file),
	// then runs with large inputs until the disk is full.
	spare := filepath.Join(dir, "spare")
	if err := os.WriteFile(spare, make([]byte, 24<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	// Committed writes, large then small, until not even a small one fits: the WAL's file then
	// holds no frames a failed transaction left for the next one to reuse.
	big, _ := json.Marshal(map[string]string{"text": strings.Repeat("x", 256<<10)})
	for _, size := range []int{256 << 10, 16 << 10, 0} {
		in, _ := json.Marshal(map[string]string{"text": strings.Repeat("x", size)})
		for i := 0; ; i++ {
			err := d.CreateRun(ctx, &store.Run{ID: uuid.NewString(), WorkflowID: "filler", UserID: u.ID, Inputs: in,
				Status: store.RunCompleted})
			if err != nil {
				t.Logf("disk full after %d runs of %d bytes: %v", i, size, err)
				break
			}
			if i > 10000 {
				t.Fatal("the disk never filled up")
			}
		}
	}
	fillToLastPage(t, d, dir, mark.ID)
	for i := range 3 {
		r, err := d.ClaimRun(ctx, "host/a", time.Minute)
		if err == nil || errors.Is(err, store.ErrNotFound) {
			t.Fatalf("claim %d on a full disk = %v, %v; want the write's error", i, r, err)
		}
	}
	for _, id := range runs {
		r, err := d.GetRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if r.ClaimedBy != "" || r.LeaseUntil != nil {
			t.Errorf("run %s claimed by %q on a full disk", id, r.ClaimedBy)
		}
	}
	walSize := func() int64 {
		fi, err := os.Stat(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	if n := walSize(); n < 4<<20 {
		t.Fatalf("the WAL holds %d bytes when the disk filled; the test wants it grown", n)
	}

	if err := os.Remove(spare); err != nil {
		t.Fatal(err)
	}
	r, err := d.ClaimRun(ctx, "host/a", time.Minute)
	if err != nil {
		t.Fatalf("claim once space is freed: %v", err)
	}
	if r.ID != runs[0] {
		t.Errorf("claimed %s, want the oldest run %s", r.ID, runs[0])
	}
	// The checkpoint runs in the background after the first successful write: wait for it.
	if !testtool.Within(30*time.Second, func() bool { return walSize() == 0 }) {
		t.Fatalf("the WAL still holds %d bytes after space was freed", walSize())
	}
	if err := d.CreateRun(ctx, &store.Run{ID: uuid.NewString(), WorkflowID: "after", UserID: u.ID, Inputs: big}); err != nil {
		t.Errorf("a write after the WAL was cut back: %v", err)
	}
}

// fillToLastPage fills the disk until not even a write of one page fits, so a claim (which writes
// at least its run's page) has no room either. The file system's being full is not enough: a
// transaction that failed left its frames in the WAL's file beyond the last commit, and the next
// transaction writes over them without asking the disk for space, so a smaller write than the one
// that failed (a claim after a failed run insert) can still commit; and a write that fails to grow
// the WAL's index (every 4,096 frames) leaves room for a smaller one below that boundary. So the
// last writes are the smallest there are: an UPDATE of one unindexed column of one run, one page,
// with the file system's last bytes taken before each, until three in a row fail.
func fillToLastPage(t *testing.T, d *sqlitestore.Driver, dir, runID string) {
	t.Helper()
	committed := 0
	for i, fails := 0, 0; fails < 3; i++ {
		if i > 10000 {
			t.Fatalf("the disk still takes one-page writes after %d of them", i)
		}
		tmpfs.Fill(t, filepath.Join(dir, fmt.Sprintf("fill-%d", i)))
		_, err := d.SQLDB().ExecContext(context.Background(), `UPDATE runs SET updated_at = ? WHERE run_id = ?`,
			time.Now().UTC().Format(sqldb.SQLiteTimeFormat), runID)
		if err != nil {
			fails++
			continue
		}
		fails = 0
		committed++
	}
	t.Logf("disk full for a one-page write after %d of them committed", committed)
}
