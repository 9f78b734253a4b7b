package pgstore_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/pgstore"
	"github.com/reelforge/reelforge/host/store/storetest"
	"github.com/reelforge/reelforge/internal/testtool"
)

// openSchema opens the driver on schema (made by the first open, dropped at the end of the test)
// with opt, or skips the test without pgvector.
func openSchema(t *testing.T, schema string, opt pgstore.Options) *pgstore.Driver {
	t.Helper()
	url := storetest.PostgresURL(t)
	opt.Schema, opt.VectorSearch = schema, true
	d, err := pgstore.Open(context.Background(), url, opt)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		d.Close()
		storetest.DropSchema(url, schema)
	})
	if !d.SupportsVectorSearch() {
		t.Skip("pgvector unavailable")
	}
	return d
}

func pending(t *testing.T, d *pgstore.Driver) int64 {
	t.Helper()
	n, err := d.PendingVectors(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// AnyPendingVectors (what a wait for the indexer polls) must agree with the count. An indexer
	// may run meanwhile (the pending rows only shrink then), so it is judged between two counts:
	// "some" needs rows before it, "none" none after it.
	some, err := d.AnyPendingVectors(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	after, err := d.PendingVectors(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if (some && n == 0) || (!some && after > 0) {
		t.Fatalf("AnyPendingVectors = %v with %d pending before and %d after", some, n, after)
	}
	return after
}

// TestPendingVectorsFound: chunks just written, before any indexer has run, are found by the
// vector search (an exact scan of the pending rows) in the order of an exact scan; once indexed,
// the same search finds them through the HNSW index.
func TestPendingVectorsFound(t *testing.T) {
	d := openSchema(t, storetest.SchemaName(), pgstore.Options{ManualIndexer: true})
	ctx := context.Background()
	user := storetest.NewUser(t, d, "")
	addChunks(t, d, user.ID, "lighting for a night shoot", "a hook in the first three seconds", "night lighting with one lamp")
	if n := pending(t, d); n != 3 {
		t.Fatalf("pending after the write = %d, want 3", n)
	}
	wantVectorHits(t, d, user.ID, 3)
	v := storetest.Vector("night lighting")
	before, err := d.NearestEmbeddings(ctx, v, 3, false)
	if err != nil {
		t.Fatal(err)
	}
	exact, err := d.NearestEmbeddings(ctx, v, 3, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(before) != 3 || !slices.Equal(before, exact) {
		t.Fatalf("pending rows: nearest %v, exact %v", before, exact)
	}
	n, err := d.IndexPendingVectors(ctx, 100)
	if err != nil || n != 3 {
		t.Fatalf("IndexPendingVectors = %d, %v; want 3", n, err)
	}
	if n := pending(t, d); n != 0 {
		t.Fatalf("pending after indexing = %d", n)
	}
	if n, err := d.IndexPendingVectors(ctx, 100); err != nil || n != 0 {
		t.Fatalf("IndexPendingVectors again = %d, %v; want 0", n, err)
	}
	wantVectorHits(t, d, user.ID, 3)
	after, err := d.NearestEmbeddings(ctx, v, 3, false)
	if err != nil || !slices.Equal(after, exact) {
		t.Fatalf("indexed rows: nearest %v (%v), exact %v", after, err, exact)
	}
	// The index scan is what finds them now: with the pending leg empty, an index without the
	// rows would return none.
	var inIndex int
	if err := d.Pool().QueryRow(ctx, `SELECT COUNT(*) FROM knowledge_embeddings WHERE vector_indexed`).Scan(&inIndex); err != nil || inIndex != 3 {
		t.Fatalf("rows marked indexed = %d, %v", inIndex, err)
	}
}

// TestIndexerDrains: the background indexer moves what an ingest wrote into the index without
// being asked.
func TestIndexerDrains(t *testing.T) {
	d := openSchema(t, storetest.SchemaName(), pgstore.Options{})
	user := storetest.NewUser(t, d, "")
	addChunks(t, d, user.ID, "lighting for a night shoot", "a hook in the first three seconds")
	waitPending(t, d, func(n int64) bool { return n == 0 }, "every row indexed")
	wantVectorHits(t, d, user.ID, 2)
}

// TestIndexerMergesKeywordPending: the keyword index's pending list may grow to 16 MB (migration
// 0720), and once this host's writes pause the indexer merges it into the index, so nothing the
// writes deferred is left once the vectors are indexed.
func TestIndexerMergesKeywordPending(t *testing.T) {
	d := openSchema(t, storetest.SchemaName(), pgstore.Options{ManualIndexer: true})
	ctx := context.Background()
	var opts []string
	if err := d.Pool().QueryRow(ctx, `SELECT COALESCE(reloptions, '{}') FROM pg_class
		WHERE oid = 'knowledge_chunks_tsv'::regclass`).Scan(&opts); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(opts, "gin_pending_list_limit=16384") {
		t.Errorf("keyword index options %v, want gin_pending_list_limit=16384", opts)
	}
	pgstore.StartIndexer(d, 1000, 256, 200*time.Millisecond, 1)
	user := storetest.NewUser(t, d, "")
	addChunks(t, d, user.ID, "lighting for a night shoot", "a hook in the first three seconds")
	waitPending(t, d, func(n int64) bool { return n == 0 }, "indexed after the pause")
	var pages int64
	if err := d.Pool().QueryRow(ctx, `SELECT gin_clean_pending_list('knowledge_chunks_tsv'::regclass)`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if pages != 0 {
		t.Errorf("%d pages left in the keyword index's pending list after the indexer ran, want 0", pages)
	}
}

// TestIndexerDefersWhileWriting: while this host's writes go on (less than the settle time
// apart), the indexer leaves their rows pending up to the backlog bound and, past it, indexes only
// what is over the bound, a batch at a time; once the writes pause it indexes everything.
func TestIndexerDefersWhileWriting(t *testing.T) {
	d := openSchema(t, storetest.SchemaName(), pgstore.Options{ManualIndexer: true})
	const backlog, batch, settle = 40, 16, 3 * time.Second
	pgstore.StartIndexer(d, backlog, batch, settle, 1)
	user := storetest.NewUser(t, d, "")
	texts := func(n, doc int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("chunk %d of document %d about night lighting", i, doc)
		}
		return out
	}
	start := time.Now()
	addChunks(t, d, user.ID, texts(30, 1)...)
	time.Sleep(500 * time.Millisecond) // the subject is an absence: no batch indexed while writing
	if n := pending(t, d); n != 30 {
		t.Fatalf("pending under the bound while writing = %d, want all 30", n)
	}
	addChunks(t, d, user.ID, texts(20, 2)...) // 50: over the bound by 10, one batch brings it under
	waitPending(t, d, func(n int64) bool { return n == 50-batch }, "one batch indexed")
	if time.Since(start) < settle {
		time.Sleep(500 * time.Millisecond) // the subject is an absence: no batch while writes go on
		if n := pending(t, d); n != 50-batch && time.Since(start) < settle {
			t.Fatalf("pending under the bound, writes not paused = %d, want %d", n, 50-batch)
		}
	}
	waitPending(t, d, func(n int64) bool { return n == 0 }, "all indexed after the pause")
	wantVectorHits(t, d, user.ID, 5)
}

// TestIndexerRestsPastBacklog: past the backlog bound and under twice it, while this host's writes
// go on, the indexer rests after each batch (its duty: here a ten-thousandth, so the rest far
// outlasts the test's writes), and once the writes pause it indexes the rest without resting. The
// writes go on through the checks, each less than settle after the one before: a check made later
// than that (a loaded machine), when the indexer may have found the writes paused, skips the test
// rather than pass it without a check.
func TestIndexerRestsPastBacklog(t *testing.T) {
	d := openSchema(t, storetest.SchemaName(), pgstore.Options{ManualIndexer: true})
	const backlog, batch, settle = 20, 8, 3 * time.Second
	pgstore.StartIndexer(d, backlog, batch, settle, 0.0001)
	user := storetest.NewUser(t, d, "")
	texts := make([]string, 35) // under twice the bound
	for i := range texts {
		texts[i] = fmt.Sprintf("chunk %d about night lighting", i)
	}
	written, prev := 30, time.Now()
	addChunks(t, d, user.ID, texts[:written]...) // over the bound by 10: a batch, then rests
	waitPending(t, d, func(n int64) bool { return n <= int64(written-batch) }, "a first batch indexed")
	for _, text := range texts[written:] {
		time.Sleep(200 * time.Millisecond) // the subject: writes spaced by the clock
		start := time.Now()
		addChunks(t, d, user.ID, text)
		written++
		n := pending(t, d)
		if time.Since(prev) >= settle {
			t.Skipf("%v between two writes and the check after the second: the writes may have paused for the indexer", time.Since(prev))
		}
		if n != int64(written-batch) {
			t.Fatalf("pending past the bound after a batch, writes going on = %d, want %d (resting)", n, written-batch)
		}
		prev = start
	}
	waitPending(t, d, func(n int64) bool { return n == 0 }, "all indexed after the pause, without rest")
	wantVectorHits(t, d, user.ID, 5)
}

// TestIndexerNoRestPastLimit: at or past twice the backlog bound, while this host's writes go on,
// the indexer's batches follow one another without rest (with the duty of a ten-thousandth, a
// rest outlasts the settle time) until the backlog is under twice the bound; it rests from there.
func TestIndexerNoRestPastLimit(t *testing.T) {
	d := openSchema(t, storetest.SchemaName(), pgstore.Options{ManualIndexer: true})
	const backlog, batch, settle = 10, 4, 5 * time.Second
	pgstore.StartIndexer(d, backlog, batch, settle, 0.0001)
	user := storetest.NewUser(t, d, "")
	texts := make([]string, 40)
	for i := range texts {
		texts[i] = fmt.Sprintf("chunk %d about night lighting", i)
	}
	start := time.Now()
	addChunks(t, d, user.ID, texts...)
	// 40, 36, ..., 20 (at twice the bound: no rest), 16: under it, resting. A count read before
	// start + settle is of writes not paused yet (the pause is counted from the write's commit).
	const want = 16
	last := int64(-1) // the last count read before start + settle
	for time.Since(start) < settle {
		n := pending(t, d)
		if time.Since(start) >= settle {
			break
		}
		if last = n; n <= want {
			break
		}
		time.Sleep(20 * time.Millisecond) // reads within the measured window; its end is the subject
	}
	if last < 0 {
		t.Skipf("the write took longer than %v: a loaded machine", settle)
	}
	if last != want {
		t.Fatalf("pending within %v of the write = %d, want %d: batches without rest down to under twice the bound (%d), then a rest",
			settle, last, want, 2*backlog)
	}
	waitPending(t, d, func(n int64) bool { return n == 0 }, "all indexed after the pause")
}

// waitPending waits up to 30 s for ok(pending rows).
func waitPending(t *testing.T, d *pgstore.Driver, ok func(int64) bool, what string) {
	t.Helper()
	var n int64
	if !testtool.Within(30*time.Second, func() bool { n = pending(t, d); return ok(n) }) {
		t.Fatalf("%s: pending %d after 30 s", what, n)
	}
}

// TestPendingVectorsVisibility: the exact scan of the pending rows tests the reader's visibility
// on them nearest first (nearestLeg), so rows the reader may not read, nearer to the query than
// all of the reader's, do not take the reader's places, and the others' reader finds its own.
func TestPendingVectorsVisibility(t *testing.T) {
	d := openSchema(t, storetest.SchemaName(), pgstore.Options{ManualIndexer: true})
	ctx := context.Background()
	other, reader := storetest.NewUser(t, d, ""), storetest.NewUser(t, d, "")
	near := make([]string, 12)
	for i := range near {
		near[i] = fmt.Sprintf("night lighting take %d", i)
	}
	theirs := addChunks(t, d, other.ID, near...)[0]
	mine := addChunks(t, d, reader.ID, "a hook in the first three seconds", "captions for a silent autoplay", "a night shoot checklist")[0]
	for _, c := range []struct {
		user, doc string
		limit     int
	}{{reader.ID, mine, 2}, {reader.ID, mine, 5}, {other.ID, theirs, 5}} {
		rows, err := d.VectorCandidates(ctx, store.SearchParams{Viewer: store.Viewer{UserID: c.user},
			Vector: storetest.Vector("night lighting"), Model: storetest.Model, Limit: c.limit})
		if err != nil {
			t.Fatal(err)
		}
		if want := min(c.limit, map[bool]int{true: 3, false: 12}[c.doc == mine]); len(rows) != want {
			t.Fatalf("limit %d: %d rows, want %d", c.limit, len(rows), want)
		}
		for _, r := range rows {
			if r.DocumentID != c.doc {
				t.Fatalf("limit %d: row of document %s, want only %s", c.limit, r.DocumentID, c.doc)
			}
		}
	}
}

// TestIndexerTwoHosts: two hosts' indexers on one database, indexing at once, move each row in
// once: the counts they report add up to the rows written, and nothing is left.
func TestIndexerTwoHosts(t *testing.T) {
	schema := storetest.SchemaName()
	a := openSchema(t, schema, pgstore.Options{ManualIndexer: true})
	b := openSchema(t, schema, pgstore.Options{ManualIndexer: true})
	user := storetest.NewUser(t, a, "")
	const docs, per = 20, 30
	for i := range docs {
		texts := make([]string, per)
		for j := range texts {
			texts[j] = fmt.Sprintf("chunk %d of document %d about night lighting", j, i)
		}
		addChunks(t, a, user.ID, texts...)
	}
	if n := pending(t, a); n != docs*per {
		t.Fatalf("pending = %d, want %d", n, docs*per)
	}
	var mu sync.Mutex
	total := 0
	var wg sync.WaitGroup
	for _, d := range []*pgstore.Driver{a, b, a, b} {
		wg.Go(func() {
			for {
				n, err := d.IndexPendingVectors(context.Background(), 32)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				total += n
				mu.Unlock()
				left, err := d.PendingVectors(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				if left == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	if total != docs*per {
		t.Fatalf("rows indexed, as the indexers counted them = %d, want %d", total, docs*per)
	}
	if n := pending(t, b); n != 0 {
		t.Fatalf("pending after both = %d", n)
	}
	wantVectorHits(t, b, user.ID, 5)
}

// TestBulkLoadWritesRowsOnce: while the HNSW index is dropped for a bulk load, rows are written
// indexed, so neither the indexer nor the build writes them a second time; the build ends the
// load (rows written after it wait for the indexer again) and its index serves every row.
func TestBulkLoadWritesRowsOnce(t *testing.T) {
	d := openSchema(t, storetest.SchemaName(), pgstore.Options{ManualIndexer: true})
	ctx := context.Background()
	user := storetest.NewUser(t, d, "")
	addChunks(t, d, user.ID, "lighting for a night shoot") // before the load: pending
	if err := d.DropVectorIndex(ctx); err != nil {
		t.Fatal(err)
	}
	addChunks(t, d, user.ID, "night lighting with one lamp", "a hook in the first three seconds")
	if got := pending(t, d); got != 1 {
		t.Errorf("rows pending after a bulk load of 2 = %d, want 1 (the row written before it): a row written "+
			"pending during the load is written again when flagged", got)
	}
	if n, err := d.IndexPendingVectors(ctx, 100); err != nil || n != 1 {
		t.Errorf("IndexPendingVectors during the load = %d, %v; want 1 row flagged", n, err)
	}
	if err := d.BuildVectorIndex(ctx); err != nil {
		t.Fatal(err)
	}
	addChunks(t, d, user.ID, "captions and music for the intro")
	if got := pending(t, d); got != 1 {
		t.Errorf("rows pending after the build and one more write = %d, want 1: the build ends the load", got)
	}
	wantVectorHits(t, d, user.ID, 4)
}

// TestIndexerRefreshesKeywordStatistics: on a table of 5,000 chunks and more the keyword scores
// take the corpus size and a common term's frequency from the planner's statistics, which only an
// ANALYZE refreshes (autovacuum may be off, and waits for its own time). Once this host's writes
// pause, its indexer analyzes the table when they changed more than 50 rows and 2% of it, so
// TermStats follows an ingest and a deletion without an ANALYZE by hand, on both search paths; a
// change under that leaves the statistics as they were.
func TestIndexerRefreshesKeywordStatistics(t *testing.T) {
	for _, vector := range []bool{true, false} {
		t.Run(map[bool]string{true: "pgvector", false: "in-memory"}[vector], func(t *testing.T) {
			ctx := context.Background()
			url := storetest.PostgresURL(t)
			schema := storetest.SchemaName()
			d, err := pgstore.Open(ctx, url, pgstore.Options{Schema: schema, VectorSearch: vector, NoPrewarm: true})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			t.Cleanup(func() {
				d.Close()
				storetest.DropSchema(url, schema)
			})
			user := storetest.NewUser(t, d, "")
			// write adds a document of n chunks, each holding "common", those for which half says
			// so "half", and a term of its own; no vectors (the graph inserts would take seconds).
			write := func(n int, half func(i int) bool) string {
				t.Helper()
				res, err := d.AddDocument(ctx, store.NewSourceParams{CreatedBy: user.ID, Name: "s", Visibility: store.VisibilityPrivate},
					&store.KnowledgeDocument{ID: uuid.NewString(), UserID: user.ID, Title: "t", Filename: "f.txt", FileHash: uuid.NewString()})
				if err != nil {
					t.Fatal(err)
				}
				chunks := make([]store.KnowledgeChunk, n)
				for i := range chunks {
					text := fmt.Sprintf("common r%s", uuid.NewString()[:8])
					if half(i) {
						text += " half"
					}
					chunks[i] = store.KnowledgeChunk{ID: uuid.NewString(), SourceID: res.Source.ID, DocumentID: res.Document.ID, Index: i,
						Text: text, SearchText: storetest.SearchText(text), EmbeddingModel: storetest.Model}
				}
				if _, err := d.WriteChunks(ctx, store.WriteChunksParams{DocumentID: res.Document.ID, Chunks: chunks}); err != nil {
					t.Fatal(err)
				}
				return res.Document.ID
			}
			stats := func() store.TermStats {
				t.Helper()
				st, err := d.TermStats(ctx, []string{"common", "half"})
				if err != nil {
					t.Fatal(err)
				}
				return st
			}
			// near: the statistics' estimates (exact here: ANALYZE reads every row of a table
			// under 30,000), within a percent.
			near := func(st store.TermStats, n, half int) bool {
				ok := func(got, want int) bool { return math.Abs(float64(got-want)) <= 0.01*float64(want) }
				return st.Docs == n && ok(st.DF["common"], n) && ok(st.DF["half"], half)
			}
			wait := func(n, half int, what string) {
				t.Helper()
				var st store.TermStats
				if !testtool.Within(15*time.Second, func() bool { st = stats(); return near(st, n, half) }) {
					t.Fatalf("%s: TermStats %d chunks, df %v after 15 s; want %d chunks, common %d, half %d", what, st.Docs, st.DF, n, n, half)
				}
			}
			write(6000, func(i int) bool { return i%2 == 0 })
			// As a table analyzed at some point (by hand, or by the indexer at the write's pause).
			if _, err := d.Pool().Exec(ctx, `ANALYZE knowledge_chunks`); err != nil {
				t.Fatal(err)
			}
			wait(6000, 3000, "6000 chunks, analyzed")
			more := write(3000, func(int) bool { return true })
			wait(9000, 6000, "3000 chunks more")
			if _, err := d.DeleteDocument(ctx, more); err != nil {
				t.Fatal(err)
			}
			wait(6000, 3000, "the 3000 deleted")
			// 100 chunks: under 50 + 2% of 6000, so no ANALYZE at the pause.
			write(100, func(int) bool { return true })
			time.Sleep(1500 * time.Millisecond) // the subject is an absence: no ANALYZE at the pause
			if st := stats(); !near(st, 6000, 3000) {
				t.Errorf("100 chunks more, under the threshold: TermStats %d chunks, df %v; want the statistics unchanged (6000, half 3000)", st.Docs, st.DF)
			}
		})
	}
}
