package sqlitestore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

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

// TestFilesOwnerOnly: the database and its -wal and -shm files are created 0600, whatever the
// umask, and an older database's 0644 files are narrowed on open (issue 37: they were 0644).
func TestFilesOwnerOnly(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "reelforge.db")
	old := syscall.Umask(0o022) // the usual umask, which made them 0644
	defer syscall.Umask(old)
	d, err := sqlitestore.Open(ctx, path, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	storetest.NewUser(t, d, "") // a write, so the -wal and -shm files exist
	check := func(when string) {
		t.Helper()
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatalf("%s: %v", when, err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("%s: %s has mode %v, want 0600", when, filepath.Base(p), fi.Mode().Perm())
			}
		}
	}
	check("new database")
	d.Close()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		_ = os.Chmod(p, 0o644) // as an earlier version left them
	}
	d, err = sqlitestore.Open(ctx, path, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	storetest.NewUser(t, d, "")
	check("reopened database")
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
		"journal_size_limit": "8388608",
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

// TestProjectListingCache: the driver keeps pages of the projects listing (see Open); every
// committed write to projects, alone or in a transaction, is seen by the next listing, and a
// rolled-back one is not.
func TestProjectListingCache(t *testing.T) {
	ctx := context.Background()
	d := open(t)
	u := storetest.NewUser(t, d, "")
	page := store.ListProjectsParams{UserID: u.ID, Limit: 20}
	names := func() []string {
		t.Helper()
		items, total, err := d.ListProjects(ctx, page)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range items {
			out = append(out, p.Name)
		}
		if total != len(out) {
			t.Errorf("total %d for %d items", total, len(out))
		}
		return out
	}
	want := func(step string, w ...string) {
		t.Helper()
		for range 2 { // the second read is served from the cache
			if got := names(); strings.Join(got, ",") != strings.Join(w, ",") {
				t.Fatalf("%s: listing = %q, want %q", step, got, w)
			}
		}
	}
	want("empty")
	a := &store.Project{ID: uuid.NewString(), UserID: u.ID, Name: "a"}
	if err := d.CreateProject(ctx, a); err != nil {
		t.Fatal(err)
	}
	want("create", "a")
	if err := d.InTx(ctx, func(tx store.Driver) error {
		return tx.CreateProject(ctx, &store.Project{ID: uuid.NewString(), UserID: u.ID, Name: "b"})
	}); err != nil {
		t.Fatal(err)
	}
	want("create in a transaction", "b", "a")
	errRollback := errors.New("roll back")
	if err := d.InTx(ctx, func(tx store.Driver) error {
		if err := tx.CreateProject(ctx, &store.Project{ID: uuid.NewString(), UserID: u.ID, Name: "c"}); err != nil {
			return err
		}
		return errRollback
	}); !errors.Is(err, errRollback) {
		t.Fatalf("InTx = %v", err)
	}
	want("rolled back", "b", "a")
	renamed := "a2"
	if _, err := d.UpdateProject(ctx, store.UpdateProjectParams{ID: a.ID, Name: &renamed}); err != nil {
		t.Fatal(err)
	}
	want("update", "b", "a2")
	if err := d.SoftDeleteProject(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	want("delete", "b")
}

// TestBatchWritesOneKeywordSegment: WriteChunksBatch adds its documents' chunks to the keyword
// index as one FTS5 segment, not one a document. FTS5 writes its pending terms out as a new
// segment whenever a statement opens a savepoint in the transaction, so writing each document's
// chunks with statements of their own wrote a segment a document (and merged them again later).
func TestBatchWritesOneKeywordSegment(t *testing.T) {
	ctx := context.Background()
	d := open(t).(*sqlitestore.Driver)
	u := storetest.NewUser(t, d, "")
	src := store.NewSourceParams{CreatedBy: u.ID, Name: "segments", Visibility: store.VisibilityPrivate}
	const docs = 6 // fewer than FTS5's automerge (8), which would merge the segments of the old way
	var nd []store.NewDocument
	for range docs {
		nd = append(nd, store.NewDocument{Source: src, Document: &store.KnowledgeDocument{ID: uuid.NewString(), UserID: u.ID,
			Title: "t", Filename: "f.txt", FileHash: uuid.NewString(), ParseStatus: store.DocParsing}})
	}
	added, err := d.AddDocuments(ctx, nd)
	if err != nil {
		t.Fatal(err)
	}
	leaves := func() int {
		var n int
		if err := d.QueryRow(ctx, `SELECT COUNT(*) FROM knowledge_chunks_fts_data`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := leaves()
	var ws []store.WriteChunksParams
	for k, a := range added {
		p := store.WriteChunksParams{DocumentID: a.Document.ID}
		for i, text := range []string{"aardvark number " + strconv.Itoa(k), "lighting at night", "a budget microphone"} {
			p.Chunks = append(p.Chunks, store.KnowledgeChunk{ID: uuid.NewString(), SourceID: a.Source.ID, DocumentID: a.Document.ID,
				Index: i, Text: text, SearchText: storetest.SearchText(text), EmbeddingModel: storetest.Model, Embedding: storetest.Vector(text)})
		}
		ws = append(ws, p)
	}
	if _, err := d.WriteChunksBatch(ctx, ws); err != nil {
		t.Fatal(err)
	}
	if n := leaves() - before; n > 1 {
		t.Errorf("WriteChunksBatch of %d documents added %d rows to the keyword index's data, want 1 (one segment of one page)", docs, n)
	}
	hits, err := d.KeywordCandidates(ctx, store.SearchParams{Viewer: store.Viewer{UserID: u.ID}, Terms: []string{"aardvark"}, Limit: 20})
	if err != nil || len(hits) != docs {
		t.Errorf("KeywordCandidates(aardvark) = %d rows, %v; want %d", len(hits), err, docs)
	}
}

// TestIngestAndOutboxLeasesByDatabaseClock: on SQLite the database's clock is the store's; a
// store an hour late keeps its documents' and outbox events' leases by it (storetest).
func TestIngestAndOutboxLeasesByDatabaseClock(t *testing.T) {
	d, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "test.db"),
		sqlitestore.Options{Clock: func() time.Time { return time.Now().Add(-time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	storetest.LeasesByDatabaseClock(t, d, d)
}
