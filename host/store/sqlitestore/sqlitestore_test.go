package sqlitestore_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/sqlitestore"
	"github.com/reelforge/reelforge/host/store/storetest"
)

func open(t *testing.T) store.Driver {
	t.Helper()
	d, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "test.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func TestConformance(t *testing.T) { storetest.Run(t, open) }

func TestReopenKeepsData(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "re.db")
	d, err := sqlitestore.Open(ctx, path, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	u := storetest.NewUser(t, d, "")
	d.Close()
	d2, err := sqlitestore.Open(ctx, path, sqlitestore.Options{})
	if err != nil {
		t.Fatalf("reopen (migrations applied twice?): %v", err)
	}
	defer d2.Close()
	if _, err := d2.GetUser(ctx, u.ID); err != nil {
		t.Errorf("GetUser after reopen = %v", err)
	}
}

// TestPragmas: every setting of Open is in force. go-sqlite3 ignores DSN parameters it does not
// know, so a misspelt one would otherwise pass unnoticed.
func TestPragmas(t *testing.T) {
	d := open(t).(*sqlitestore.Driver)
	want := map[string]string{
		"journal_mode":       "wal",
		"busy_timeout":       "15000",
		"foreign_keys":       "1",
		"synchronous":        "1", // NORMAL
		"cache_size":         "-16000",
		"mmap_size":          "268435456",
		"temp_store":         "2", // MEMORY
		"wal_autocheckpoint": "10000",
	}
	for name, w := range want {
		var got string
		if err := d.QueryRow(context.Background(), "PRAGMA "+name).Scan(&got); err != nil {
			t.Fatalf("PRAGMA %s: %v", name, err)
		}
		if got != w {
			t.Errorf("PRAGMA %s = %s, want %s", name, got, w)
		}
	}
}
