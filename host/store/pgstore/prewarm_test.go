package pgstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/pgstore"
	"github.com/reelforge/reelforge/host/store/storetest"
	"github.com/reelforge/reelforge/internal/testtool"
)

// waitPrewarm waits for d's prewarm to settle (done, failed or unavailable) and returns its state.
func waitPrewarm(t *testing.T, d *pgstore.Driver) store.PrewarmStatus {
	t.Helper()
	var st store.PrewarmStatus
	if !testtool.Within(20*time.Second, func() bool {
		st = d.PrewarmStatus()
		return st.State != "running" && st.State != "waiting"
	}) {
		t.Fatalf("prewarm still %s after 20 s", st.State)
	}
	return st
}

// TestPrewarm: the driver prewarms when it opens, reading the HNSW index, the keyword leg's GIN
// index and the chunks' heap whole into shared buffers (pg_prewarm's count of pages is each
// relation's size, and pg_buffercache finds the index's pages there); it prewarms once per start
// of the server, however often the pool opens connections, and again when the start changes.
func TestPrewarm(t *testing.T) {
	t.Parallel()
	d := openSchema(t, storetest.SchemaName(), pgstore.Options{ManualIndexer: true})
	ctx := context.Background()
	if st := waitPrewarm(t, d); st.State != "done" {
		t.Skipf("prewarm %s: %s (pg_prewarm unavailable to this role)", st.State, st.Reason)
	}
	if n := pgstore.PrewarmRuns(d); n != 1 {
		t.Fatalf("prewarms after Open = %d, want 1", n)
	}
	// New connections (as after a restart) without a new start of the server: nothing again.
	pgstore.Nudge(d)
	pgstore.Nudge(d)
	time.Sleep(200 * time.Millisecond) // the subject is an absence: no prewarm starts; nothing to wait on
	if n := pgstore.PrewarmRuns(d); n != 1 {
		t.Fatalf("prewarms after new connections of the same server = %d, want 1", n)
	}

	user := storetest.NewUser(t, d, "")
	texts := make([]string, 200)
	for i := range texts {
		texts[i] = fmt.Sprintf("night lighting note %d with one lamp and %s", i, strings.Repeat("a reflector ", 1+i%7))
	}
	addChunks(t, d, user.ID, texts...)
	if _, err := d.IndexPendingVectors(ctx, 1000); err != nil {
		t.Fatal(err)
	}
	pgstore.ForgetServerStart(d) // as after a restart
	// The count is checked below: a missing second prewarm fails there, with the state.
	testtool.Within(20*time.Second, func() bool { return pgstore.PrewarmRuns(d) >= 2 })
	st := waitPrewarm(t, d)
	if n := pgstore.PrewarmRuns(d); n != 2 || st.State != "done" {
		t.Fatalf("after a new server start: %d prewarms, state %s (%s); want 2, done", n, st.State, st.Reason)
	}
	rels := pgstore.PrewarmedRelations(d)
	var sizes int64
	for _, name := range []string{"knowledge_embeddings_hnsw_h8", "knowledge_chunks_tsv", "knowledge_chunks", "knowledge_embeddings"} {
		var size int64
		if err := d.Pool().QueryRow(ctx, `SELECT pg_relation_size($1::regclass)`, name).Scan(&size); err != nil {
			t.Fatal(err)
		}
		sizes += size
		got := rels[name]
		if diff := cmp.Diff(pgstore.PrewarmedRelation{Mode: "buffer", Bytes: size, Blocks: size / 8192}, got); diff != "" || size == 0 {
			t.Errorf("prewarm of %s (%d bytes) (-want +got):\n%s", name, size, diff)
		}
	}
	if st.BufferBytes < sizes || st.ServerStart.IsZero() || st.Finished.Before(st.Started) {
		t.Errorf("PrewarmStatus = %+v; want at least %d bytes into shared buffers, the server's start, a finish", st, sizes)
	}
	if _, err := d.Pool().Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_buffercache WITH SCHEMA public`); err != nil {
		t.Logf("pg_buffercache unavailable, its check skipped: %v", err)
		return
	}
	var cached, blocks int64
	if err := d.Pool().QueryRow(ctx, `SELECT (SELECT COUNT(*) FROM public.pg_buffercache b WHERE b.relfilenode = pg_relation_filenode($1::regclass)
			AND b.reldatabase = (SELECT oid FROM pg_database WHERE datname = current_database()) AND b.relforknumber = 0),
			pg_relation_size($1::regclass) / 8192`, "knowledge_embeddings_hnsw_h8").Scan(&cached, &blocks); err != nil {
		t.Fatal(err)
	}
	if cached != blocks {
		t.Errorf("HNSW index pages in shared buffers after the prewarm = %d, want all %d", cached, blocks)
	}
}

// TestPrewarmUnavailable: without the extension (here one that does not exist) the driver says
// so in its prewarm state, once, and searches work as before.
func TestPrewarmUnavailable(t *testing.T) {
	t.Parallel()
	d := openSchema(t, storetest.SchemaName(), pgstore.WithPrewarmExtension(pgstore.Options{ManualIndexer: true}, "reelforge_no_prewarm"))
	st := waitPrewarm(t, d)
	if st.State != "unavailable" || !strings.Contains(st.Reason, "reelforge_no_prewarm") {
		t.Fatalf("PrewarmStatus = %+v; want unavailable, naming the extension", st)
	}
	user := storetest.NewUser(t, d, "")
	addChunks(t, d, user.ID, "lighting for a night shoot", "night lighting with one lamp")
	wantVectorHits(t, d, user.ID, 2)
	pgstore.Nudge(d)
	time.Sleep(100 * time.Millisecond) // the subject is an absence: no second prewarm; nothing to wait on
	if n := pgstore.PrewarmRuns(d); n != 1 {
		t.Errorf("prewarm attempts = %d, want 1 (once per start of the server)", n)
	}
}

// TestPlacePrewarm: relations go into shared buffers in order while they fit, then into the page
// cache while they fit, else nowhere; one that does not fit leaves the room to the next ones.
func TestPlacePrewarm(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		sizes          []int64
		buffers, cache int64
		want           []string
	}{
		"all in buffers":        {[]int64{40, 30, 20}, 100, 0, []string{"buffer", "buffer", "buffer"}},
		"the rest in the cache": {[]int64{40, 30, 20, 50}, 80, 60, []string{"buffer", "buffer", "read", ""}},
		"a big one skipped":     {[]int64{40, 100, 20}, 70, 10, []string{"buffer", "", "buffer"}},
		"empty relations":       {[]int64{0, 10}, 10, 0, []string{"", "buffer"}},
		"no room":               {[]int64{10}, 0, -5, []string{""}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, pgstore.PlacePrewarm(tt.sizes, tt.buffers, tt.cache)); diff != "" {
				t.Errorf("PlacePrewarm(%v, %d, %d) (-want +got):\n%s", tt.sizes, tt.buffers, tt.cache, diff)
			}
		})
	}
}
