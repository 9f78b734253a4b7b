package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reelforge/reelforge/bench/kbbench"
	"github.com/reelforge/reelforge/host/kb"
	"github.com/reelforge/reelforge/host/kb/embed"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/pgstore"
	"github.com/reelforge/reelforge/host/store/sqlitestore"
	"github.com/reelforge/reelforge/internal/textgen"
)

var (
	kbSizes     = flag.String("kb-chunks", "1000,10000", "corpus sizes (chunks) for the knowledge search latency")
	kbQueries   = flag.Int("kb-queries", 200, "searches per corpus size")
	kbQuestions = flag.Int("kb-questions", 0, "questions per ../shared/bench set (0: all)")
	kbBenchDir  = flag.String("kb-bench-dir", "../shared/bench", "the public retrieval sets")
	kbReference = flag.Bool("kb-reference", true, "retrieval: also run kbbench's reference BM25 and in-memory hybrid (no store)")
	kbDriverSel = flag.String("kb-drivers", "", "knowledge drivers to run, by name prefix (default all): sqlite, postgres+pgvector, postgres (in-memory)")
	kbBulkFrom  = flag.Int("kb-bulk-from", 0, "on postgres+pgvector, ingest the corpus sizes from this many chunks up with the HNSW index dropped, "+
		"then build it in one CREATE INDEX and VACUUM ANALYZE before searching (0: never); that row's ingest MB/s is without the index")
	kbRecall = flag.Int("kb-recall", 0, "on postgres+pgvector, also measure the HNSW leg's recall@100 against an exact scan over this many of the queries")
	kbKeep   = flag.Bool("kb-keep", false, "keep the PostgreSQL schemas of the knowledge bench (their names are printed) instead of dropping them")
	kbBatch  = flag.Int("kb-batch-chunks", 5000, "after the search, ingest about this many chunks more through kb.IngestBatch (batch/text: "+
		"100 documents a call, in groups of kb.BatchGroup) for its MB/s (0: skip; skipped with -kb-schema)")
	kbBuildMem = flag.String("kb-build-mem", "", "on postgres+pgvector, the maintenance_work_mem of the store's connections (a session setting, e.g. 6GB; "+
		"default the server's) for -kb-bulk-from's CREATE INDEX: pgvector builds the HNSW graph in memory while it fits (about 4 KB a chunk), "+
		"and goes on on disk past it, several times slower")
	kbPending = flag.String("kb-pending", "", "on postgres+pgvector, after the largest corpus size: search it again with this many rows more "+
		"pending for the vector indexer (comma-separated, ascending, e.g. 2000,5000,10000; ingested through kb.IngestBatch into the same "+
		"user's corpus with the indexer held off, deleted afterwards), for what the exact scan of pending rows costs a search")
	kbPrewarm = flag.String("kb-prewarm", "start", "on PostgreSQL, the store's background prewarm of the server's caches: start (the searches "+
		"begin right away, as a user's would after a restart), wait (they begin once it finished) or off (the store opened without it); the row "+
		"says when it finished")
	kbBeforeSearch = flag.String("kb-before-search", "", "a shell command run before each pass of searches, once the store is open and the "+
		"corpus ready (e.g. restart PostgreSQL and drop the OS page cache): the pass then meets a server just started, as a running host's "+
		"searches would")
	kbHits = flag.String("kb-hits", "", "write each search's query and hits (chunk id and scores, one line a search) to this file, "+
		"for comparing the results of two builds over the same kept corpus (-kb-schema): a change meant to keep the ranking must leave it the same")
	kbSchema = flag.String("kb-schema", "", "on PostgreSQL, the schema of the ingest and search part (kept afterwards); when it already "+
		"holds that part's corpus (a run with -kb-keep), its documents are regenerated, not ingested again, and the search runs on it")
)

// vectorIndexer is pgstore's bulk-load interface (see -kb-bulk-from).
type vectorIndexer interface {
	DropVectorIndex(ctx context.Context) error
	BuildVectorIndex(ctx context.Context) error
	BulkLoading(ctx context.Context) (bool, error)
	NearestEmbeddings(ctx context.Context, v []float32, n int, exact bool) ([]string, error)
}

// kbDriver is one of the three search paths.
type kbDriver struct {
	name string
	open func(ctx context.Context, schema string) (store.Driver, func(), error) // schema: "" for a new one
}

func kbDrivers(o *options) []kbDriver {
	var out []kbDriver
	for _, d := range allKBDrivers(o) {
		if *kbDriverSel == "" {
			out = append(out, d)
			continue
		}
		for _, sel := range strings.Split(*kbDriverSel, ",") {
			if sel = strings.TrimSpace(sel); sel != "" && strings.HasPrefix(d.name, sel) {
				out = append(out, d)
				break
			}
		}
	}
	return out
}

func allKBDrivers(o *options) []kbDriver {
	ds := []kbDriver{{"sqlite", func(ctx context.Context, _ string) (store.Driver, func(), error) {
		dir, err := os.MkdirTemp("", "bench-kb-")
		if err != nil {
			return nil, nil, err
		}
		d, err := sqlitestore.Open(ctx, filepath.Join(dir, "kb.db"), sqlitestore.Options{})
		if err != nil {
			return nil, nil, err
		}
		return d, func() { d.Close(); os.RemoveAll(dir) }, nil
	}}}
	if o.pgURL == "" {
		return ds
	}
	for _, vector := range []bool{true, false} {
		name := "postgres+pgvector"
		if !vector {
			name = "postgres (in-memory)"
		}
		ds = append(ds, kbDriver{name, func(ctx context.Context, schema string) (store.Driver, func(), error) {
			keep := *kbKeep || schema != ""
			if schema == "" {
				schema = fmt.Sprintf("bench_kb_%d", time.Now().UnixNano())
			}
			url := withRuntimeParam(o.pgURL, "application_name", benchApp)
			if vector && *kbBuildMem != "" {
				url = withRuntimeParam(url, "maintenance_work_mem", *kbBuildMem)
			}
			d, err := pgstore.Open(ctx, url, pgstore.Options{Schema: schema, VectorSearch: vector, NoPrewarm: *kbPrewarm == "off"})
			if err != nil {
				return nil, nil, err
			}
			if vector && !d.SupportsVectorSearch() {
				d.Close()
				return nil, nil, nil
			}
			return d, func() {
				d.Close()
				if keep {
					fmt.Fprintf(os.Stderr, "bench: kept schema %s (%s)\n", schema, name)
					return
				}
				dropSchema(ctx, o.pgURL, schema)
			}, nil
		}})
	}
	return ds
}

// benchKnowledge measures ingest, search and ask on every driver (retrieval quality is its own
// section, kbRetrieval).
func benchKnowledge(ctx context.Context, o *options) error {
	if p := *kbPrewarm; p != "start" && p != "wait" && p != "off" {
		return fmt.Errorf("-kb-prewarm: want start, wait or off, got %q", p)
	}
	var sizes []int
	for _, s := range strings.Split(*kbSizes, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && n > 0 {
			sizes = append(sizes, n)
		}
	}
	sort.Ints(sizes)
	fmt.Println("## Knowledge base: ingest, search and ask (local embedder, extractive answerer; synthetic Zipf text, 3-word queries)")
	fmt.Println()
	fmt.Println("| driver | ingest MB/s | host CPU MB/s | server CPU MB/s | chunks | search p50 ms | search p95 ms | ask p95 ms |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|")
	figs := map[string]*kbIngestFigures{}
	for _, d := range kbDrivers(o) {
		st, done, err := d.open(ctx, *kbSchema)
		if err != nil {
			return fmt.Errorf("%s: %w", d.name, err)
		}
		if st == nil {
			fmt.Printf("| %s | pgvector unavailable | | | | | | |\n", d.name)
			continue
		}
		meter := &serverMeter{}
		if d.name != "sqlite" {
			meter.url, meter.app = o.pgURL, benchApp
		}
		fig := &kbIngestFigures{}
		figs[d.name] = fig
		err = kbLatency(ctx, d.name, st, sizes, *kbQueries, meter, fig)
		if err == nil && *kbBatch > 0 && *kbSchema == "" {
			err = kbBatchIngest(ctx, d.name, st, *kbBatch, &serverMeter{url: meter.url, app: meter.app}, fig)
		}
		done()
		if err != nil {
			return fmt.Errorf("%s: %w", d.name, err)
		}
	}
	fmt.Println()
	kbIngestTargets(figs)
	return benchKBHTTP(ctx, o)
}

// kbIngestFigures are a driver's ingest figures of one run: one document a call at the largest
// corpus size, and batch/text; MB/s of wall time and of the host's CPU time.
type kbIngestFigures struct{ one, oneCPU, batch, batchCPU float64 }

// kbIngestTargets prints the ingest targets of PostgreSQL with pgvector against the figures of
// the same run: at least 3 MB/s one document a call, 4 MB/s through batch/text, and a host CPU
// cost per MB at most SQLite's (a host CPU MB/s at least SQLite's).
func kbIngestTargets(figs map[string]*kbIngestFigures) {
	pg, sq := figs["postgres+pgvector"], figs["sqlite"]
	if pg == nil || pg.one == 0 {
		return
	}
	fmt.Printf("Targets, PostgreSQL with pgvector: ≥ 3 MB/s one document a call: %s (%.2f).", metOrNot(pg.one >= 3), pg.one)
	if pg.batch > 0 {
		fmt.Printf(" ≥ 4 MB/s through batch/text: %s (%.2f).", metOrNot(pg.batch >= 4), pg.batch)
	}
	if sq != nil && sq.oneCPU > 0 {
		fmt.Printf(" Host CPU per MB at most SQLite's, one document a call: %s (%.2f against %.2f MB/s of CPU)", metOrNot(pg.oneCPU >= sq.oneCPU), pg.oneCPU, sq.oneCPU)
		if pg.batchCPU > 0 && sq.batchCPU > 0 {
			fmt.Printf("; batch/text: %s (%.2f against %.2f)", metOrNot(pg.batchCPU >= sq.batchCPU), pg.batchCPU, sq.batchCPU)
		}
		fmt.Print(".")
	}
	fmt.Print("\n\n")
}

// kbLatency ingests the corpus sizes one document a call and searches each. Its server CPU column
// (PostgreSQL) includes the background indexer's work on what was ingested: after each size's
// ingest it waits for the indexer to finish before reading the server's CPU and searching (the
// ingest MB/s does not include that wait).
func kbLatency(ctx context.Context, name string, st store.Driver, sizes []int, queries int, meter *serverMeter, fig *kbIngestFigures) error {
	s := kb.New(st, kb.Options{})
	user := uuid.NewString()
	r := rand.New(rand.NewPCG(1, 2))
	vocab := textgen.NewVocab(r)
	chunks, bytes := 0, 0
	var ingestTime, ingestCPU time.Duration
	vi, _ := st.(vectorIndexer)
	if vi != nil && !st.SupportsVectorSearch() {
		vi = nil
	}
	bulk, chunks0, bytes0 := false, 0, 0
	reused := false
	if pg, ok := st.(interface{ Pool() *pgxpool.Pool }); ok && *kbSchema != "" {
		// A kept corpus: the same generator's documents, so the queries below are the same too.
		var owner string
		var docs int
		err := pg.Pool().QueryRow(ctx, `SELECT s.created_by, (SELECT COUNT(*) FROM knowledge_documents d WHERE d.source_id = s.id),
			(SELECT COUNT(*) FROM knowledge_chunks c WHERE c.source_id = s.id) FROM knowledge_sources s WHERE s.name = 'bench'`).Scan(&owner, &docs, &chunks)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if err == nil {
			user, reused = owner, true
			for i := 0; i < docs; i++ {
				bytes += len(vocab.Text(10))
			}
		}
	}
	// A bulk load an earlier run left unfinished (its schema kept, -kb-schema) is this run's to
	// finish: the store left the index to it (pgstore builds it once, in BuildVectorIndex).
	unfinished := false
	if vi != nil {
		var err error
		if unfinished, err = vi.BulkLoading(ctx); err != nil {
			return err
		}
	}
	for _, size := range sizes {
		if vi != nil && !bulk && (*kbBulkFrom > 0 && size >= *kbBulkFrom && chunks < size || unfinished) {
			if err := vi.DropVectorIndex(ctx); err != nil {
				return err
			}
			// The row's ingest figure is of the bulk load alone.
			bulk, chunks0, bytes0, ingestTime, ingestCPU = true, chunks, bytes, 0, 0
		}
		meter.begin(ctx)
		for chunks < size {
			text := vocab.Text(10)
			t0, c0 := time.Now(), processCPU()
			res, err := s.Ingest(ctx, kb.IngestParams{UserID: user, SourceName: "bench", Visibility: store.VisibilityPrivate, Text: text})
			if err != nil {
				return err
			}
			ingestTime += time.Since(t0)
			ingestCPU += processCPU() - c0
			chunks += res.ChunksCount
			bytes += len(text)
		}
		wait, err := waitIndexed(ctx, st, vi != nil)
		if err != nil {
			return err
		}
		meter.end(ctx)
		build := ""
		if bulk {
			t0 := time.Now()
			if err := vi.BuildVectorIndex(ctx); err != nil {
				return err
			}
			// The load's wall time is of the ingest calls alone; the wait after it is the background
			// indexer's on rows written before the drop (those of the load are written indexed).
			build = fmt.Sprintf(" (bulk load: %.2f MB/s without the index, %d chunks in %.0f s, then %.0f s for the indexer's last rows; "+
				"index build and VACUUM ANALYZE %.0f s%s)", float64(bytes-bytes0)/1e6/ingestTime.Seconds(), chunks-chunks0,
				ingestTime.Seconds(), wait.Seconds(), time.Since(t0).Seconds(), buildMemNote(ctx, st))
		}
		if *kbBeforeSearch != "" {
			if out, err := exec.CommandContext(ctx, "sh", "-c", *kbBeforeSearch).CombinedOutput(); err != nil {
				return fmt.Errorf("-kb-before-search: %w: %s", err, out)
			}
		}
		hitsOut, err := newHitsFile(*kbHits, name, size)
		if err != nil {
			return err
		}
		defer hitsOut.close() // on an error's return; after the searches it is closed below, its error reported
		prewarm := newPrewarmClock(ctx, st, *kbPrewarm == "wait")
		reads := newDiskReads(ctx, meter.url, meter.app)
		var search, ask []float64
		var recallQs []string
		load0 := loadAverage()
		var per searchCPU
		warmFrom := min(queries-1, 10) // the pool's connections are open by then
		for i := 0; i < queries; i++ {
			q := vocab.Word() + " " + vocab.Word() + " " + vocab.Word()
			if vi != nil && len(recallQs) < *kbRecall {
				recallQs = append(recallQs, q)
			}
			warm := i >= warmFrom
			if warm && meter.url != "" {
				per.refresh(ctx, st, meter)
			}
			s0, ok := pidsCPU(per.pids)
			c0, t0 := processCPU(), time.Now()
			res, err := s.Search(ctx, kb.SearchParams{UserID: user, Query: q, TopK: 5})
			if err != nil {
				return err
			}
			search = append(search, msSince(t0))
			hitsOut.add(q, res)
			if warm {
				per.add(processCPU()-c0, s0, ok)
			}
			if i%4 == 0 {
				t0 = time.Now()
				if _, err := s.Ask(ctx, kb.SearchParams{UserID: user, Query: q, TopK: 5}); err != nil {
					return err
				}
				ask = append(ask, msSince(t0))
			}
		}
		if err := hitsOut.close(); err != nil {
			return err
		}
		mbs := fmt.Sprintf("%.2f", float64(bytes)/1e6/ingestTime.Seconds())
		cpu := fmt.Sprintf("%.2f", float64(bytes)/1e6/ingestCPU.Seconds())
		if bulk {
			mbs, cpu = "(bulk)", ""
		} else if reused && ingestTime == 0 {
			mbs, cpu = "(kept)", ""
		} else {
			fig.one, fig.oneCPU = float64(bytes)/1e6/ingestTime.Seconds(), float64(bytes)/1e6/ingestCPU.Seconds()
		}
		scpu := meter.mbs(bytes - bytes0)
		if bulk || (reused && ingestTime == 0) {
			scpu = ""
		}
		fmt.Printf("| %s | %s | %s | %s | %d | %.1f | %.1f | %.1f |\n", name, mbs, cpu, scpu, chunks,
			kbQuantile(search, 0.5), kbQuantile(search, 0.95), kbQuantile(ask, 0.95))
		if per.n > 0 {
			fmt.Printf("| %s | (CPU a search, mean of the last %d: host %.2f ms%s) | | | | | | |\n", name, per.n, per.host.Seconds()*1000/float64(per.n), per.serverNote())
		}
		if vi != nil {
			note := build
			sizes, err := kbRelationSizes(ctx, st)
			if err != nil {
				return err
			}
			note += sizes + prewarm.note() + reads.note(ctx) + fmt.Sprintf(" (load average over 1 min before and after the searches: %s, %s)", load0, loadAverage())
			if len(recallQs) > 0 {
				r, err := kbVectorRecall(ctx, vi, recallQs)
				if err != nil {
					return err
				}
				note += fmt.Sprintf(" (HNSW leg recall@100 against an exact scan, %d queries: %.3f)", len(recallQs), r)
			}
			fmt.Printf("| %s |%s | | | | | | |\n", name, note)
		}
	}
	if h, ok := st.(indexHolder); ok && vi != nil && *kbPending != "" {
		return kbPendingSearch(ctx, name, h, s, user, vocab, chunks, queries, meter)
	}
	return nil
}

// indexHolder is pgstore's hold on the background vector indexer (see -kb-pending).
type indexHolder interface {
	pendingVectors
	HoldIndexer(ctx context.Context) (func(), error)
}

// kbPendingSearch measures the search of kbLatency's corpus (chunks, indexed) with rows pending
// for the vector indexer, which every search scans exactly: for each count of -kb-pending it holds
// the indexer off, ingests documents into the same user's corpus until that many rows are pending,
// and runs the queries, printing their p50 and p95 and the server's CPU a search (PostgreSQL's
// backends over the searches). The documents are deleted afterwards, before they are indexed, so
// the corpus is as it was (a kept one, -kb-schema, can be measured again).
func kbPendingSearch(ctx context.Context, name string, h indexHolder, s *kb.Service, user string, vocab *textgen.Vocab, chunks, queries int, of *serverMeter) error {
	release, err := h.HoldIndexer(ctx)
	if err != nil {
		return err
	}
	var added []string
	defer func() {
		for _, id := range added {
			if _, err := s.DeleteDocument(ctx, user, false, id); err != nil {
				fmt.Fprintf(os.Stderr, "bench: delete document %s: %v\n", id, err)
			}
		}
		release()
	}()
	for _, f := range strings.Split(*kbPending, ",") {
		want, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || want < 0 {
			return fmt.Errorf("-kb-pending: %q", f)
		}
		var pending int64
		for {
			if pending, err = h.PendingVectors(ctx); err != nil {
				return err
			}
			if int(pending) >= want {
				break
			}
			items := make([]kb.IngestParams, min(100, (want-int(pending))/10+1)) // about 10 chunks a document
			for i := range items {
				items[i] = kb.IngestParams{UserID: user, SourceName: "bench-pending", Visibility: store.VisibilityPrivate, Text: vocab.Text(10)}
			}
			for _, o := range s.IngestBatch(ctx, items) {
				if o.Err != nil {
					return o.Err
				}
				chunks += o.Result.ChunksCount
				added = append(added, o.Result.Document.ID)
			}
		}
		meter := &serverMeter{url: of.url, app: of.app}
		var search []float64
		meter.begin(ctx)
		for i := 0; i < queries; i++ {
			q := vocab.Word() + " " + vocab.Word() + " " + vocab.Word()
			t0 := time.Now()
			if _, err := s.Search(ctx, kb.SearchParams{UserID: user, Query: q, TopK: 5}); err != nil {
				return err
			}
			search = append(search, msSince(t0))
		}
		meter.end(ctx)
		cpu := ""
		if meter.ok {
			cpu = fmt.Sprintf(", server CPU %.1f ms a search", float64(meter.total.Microseconds())/1000/float64(queries))
		}
		fmt.Printf("| %s, %d rows pending for the indexer%s | | | | %d | %.1f | %.1f | |\n", name, pending, cpu, chunks,
			kbQuantile(search, 0.5), kbQuantile(search, 0.95))
	}
	return nil
}

// searchCPU adds up the CPU time of searches: the host process's, and the PostgreSQL backends'
// of its pool (pids; none on SQLite) read from /proc before and after each search. /proc counts
// in 10 ms ticks, so a figure is a mean over many searches.
type searchCPU struct {
	pids         []int32
	open         int // the pool's open connections when pids were read
	n            int
	host, server time.Duration
	serverOK     bool
}

// refresh reads the store's backends again when its pool has opened connections since the last
// read (and at the first call): the pool grows from 2 to 4 connections during a pass at 100k
// chunks, and a backend left out of pids left its share of the searches out of the server's
// column (13.6 to 15.9 ms a search where the legs alone used about 20).
func (c *searchCPU) refresh(ctx context.Context, st store.Driver, meter *serverMeter) {
	open := -1
	if ps, ok := st.(store.Stats); ok {
		open = ps.PoolStats().Open
	}
	if c.pids == nil || open > c.open {
		c.pids, c.open = backendPIDs(ctx, meter.url, meter.app), open
	}
}

// add counts a search that used host of the process's CPU; s0 is the backends' CPU before it.
func (c *searchCPU) add(host, s0 time.Duration, ok bool) {
	s1, ok1 := pidsCPU(c.pids)
	c.n++
	c.host += host
	c.serverOK = (c.n == 1 || c.serverOK) && ok && ok1 && len(c.pids) > 0
	c.server += s1 - s0
}

func (c *searchCPU) serverNote() string {
	if !c.serverOK {
		return ""
	}
	return fmt.Sprintf(", PostgreSQL backends %.2f ms", c.server.Seconds()*1000/float64(c.n))
}

// kbBatchIngest measures ingest through kb.IngestBatch, the batch/text path, in calls of 100
// documents of the same generator as kbLatency's, into a source of their own (after the search
// figures, so it does not change them). The row's ingest and host CPU columns are of this ingest.
func kbBatchIngest(ctx context.Context, name string, st store.Driver, chunks int, meter *serverMeter, fig *kbIngestFigures) error {
	s := kb.New(st, kb.Options{})
	user := uuid.NewString()
	vocab := textgen.NewVocab(rand.New(rand.NewPCG(3, 4)))
	done, bytes := 0, 0
	var wall, cpu time.Duration
	meter.begin(ctx)
	for done < chunks {
		items := make([]kb.IngestParams, 100)
		for i := range items {
			text := vocab.Text(10)
			bytes += len(text)
			items[i] = kb.IngestParams{UserID: user, SourceName: "bench-batch", Visibility: store.VisibilityPrivate, Text: text}
		}
		t0, c0 := time.Now(), processCPU()
		out := s.IngestBatch(ctx, items)
		wall += time.Since(t0)
		cpu += processCPU() - c0
		for _, o := range out {
			if o.Err != nil {
				return o.Err
			}
			done += o.Result.ChunksCount
		}
	}
	if _, err := waitIndexed(ctx, st, st.SupportsVectorSearch()); err != nil {
		return err
	}
	meter.end(ctx)
	fig.batch, fig.batchCPU = float64(bytes)/1e6/wall.Seconds(), float64(bytes)/1e6/cpu.Seconds()
	fmt.Printf("| %s, batch/text (groups of %d) | %.2f | %.2f | %s | %d | | | |\n", name, kb.BatchGroup,
		float64(bytes)/1e6/wall.Seconds(), float64(bytes)/1e6/cpu.Seconds(), meter.mbs(bytes), done)
	return nil
}

// kbVectorRecall is the share of the exact 100 nearest embeddings (cosine, a sequential scan)
// that the HNSW index scan returns under the search's own index settings, over the local
// embedder's vectors of qs.
func kbVectorRecall(ctx context.Context, vi vectorIndexer, qs []string) (float64, error) {
	emb := embed.NewLocal()
	found, total := 0, 0
	for _, q := range qs {
		v := emb.Vector(q)
		approx, err := vi.NearestEmbeddings(ctx, v, 100, false)
		if err != nil {
			return 0, err
		}
		exact, err := vi.NearestEmbeddings(ctx, v, 100, true)
		if err != nil {
			return 0, err
		}
		got := make(map[string]bool, len(approx))
		for _, id := range approx {
			got[id] = true
		}
		for _, id := range exact {
			total++
			if got[id] {
				found++
			}
		}
	}
	return float64(found) / float64(max(1, total)), nil
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1000 }

func kbQuantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

type benchDoc struct {
	ID, Title, Text string
}

type benchQuestion struct {
	ID          string   `json:"id"`
	Question    string   `json:"question"`
	AnswerTexts []string `json:"answer_texts"`
	GoldDocID   string   `json:"gold_doc_id"`
}

// kbRetrieval runs the public sets through Service.Search on each path: each document ingested
// with its id as title into a source of the set, strict hit@5 and MRR@10 of the hybrid and of
// BM25 alone (kb.Options.KeywordOnly: the same chunks, store and statistics), and the questions
// whose answer the hybrid ranks lower than BM25 alone (0 by construction with the local
// embedder, see host/kb/rank). kbbench's reference BM25 (the sets' README tokenization) runs beside
// them.
func kbRetrieval(ctx context.Context, o *options) error {
	sets, err := kbbench.Sets(*kbBenchDir)
	if err != nil || len(sets) == 0 {
		fmt.Printf("(no retrieval sets under %s: skipped)\n\n", *kbBenchDir)
		return nil
	}
	fmt.Printf("## Knowledge base: retrieval on %s (strict hit@5, MRR@10; %s)\n\n", *kbBenchDir, questionsLabel())
	fmt.Println("Target: on every set and path, the hybrid at or above BM25 alone, and no question whose answer it ranks lower (worse = 0).")
	fmt.Println()
	fmt.Println("| set | path | questions | BM25 hit@5 | BM25 MRR@10 | hybrid hit@5 | hybrid MRR@10 | worse than BM25 | better | hybrid p95 ms |")
	fmt.Println("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, dir := range sets {
		set := filepath.Base(dir)
		if *kbReference {
			base, err := kbbench.Run(dir, kbbench.Options{MaxQuestions: *kbQuestions})
			if err != nil {
				return err
			}
			fmt.Printf("| %s | reference BM25 (README tokens) and in-memory hybrid (kbbench) | %d | %.4f | %.4f | %.4f | %.4f | %d | | %.1f |\n",
				set, base.Questions, base.BM25.Hit5, base.BM25.MRR10, base.Hybrid.Hit5, base.Hybrid.MRR10, base.Worse, base.QueryP95MS)
		}
		docs, err := kbbench.ReadJSONL[benchDoc](filepath.Join(dir, "docs.jsonl"))
		if err != nil {
			return err
		}
		qs, err := kbbench.ReadJSONL[benchQuestion](filepath.Join(dir, "questions.jsonl"))
		if err != nil {
			return err
		}
		if *kbQuestions > 0 && len(qs) > *kbQuestions {
			qs = qs[:*kbQuestions]
		}
		for _, d := range kbDrivers(o) {
			st, done, err := d.open(ctx, "")
			if err != nil {
				return err
			}
			if st == nil {
				continue
			}
			r, err := kbSet(ctx, st, set, docs, qs)
			done()
			if err != nil {
				return fmt.Errorf("%s %s: %w", set, d.name, err)
			}
			fmt.Printf("| %s | %s | %d | %.4f | %.4f | %.4f | %.4f | %d | %d | %.1f |\n", set, d.name, len(qs),
				r.bm25.Hit5, r.bm25.MRR10, r.hybrid.Hit5, r.hybrid.MRR10, r.worse, r.better, r.p95)
		}
	}
	fmt.Println()
	return nil
}

func questionsLabel() string {
	if *kbQuestions > 0 {
		return fmt.Sprintf("the first %d questions of each set", *kbQuestions)
	}
	return "every question of each set"
}

// setResult is one set on one path.
type setResult struct {
	hybrid, bm25  kbbench.Metrics
	worse, better int // questions whose answer the hybrid ranks lower (higher) than BM25 alone
	p95           float64
}

func kbSet(ctx context.Context, st store.Driver, set string, docs []benchDoc, qs []benchQuestion) (setResult, error) {
	var r setResult
	s := kb.New(st, kb.Options{})
	bm25 := kb.New(st, kb.Options{KeywordOnly: true})
	user := uuid.NewString()
	items := make([]kb.IngestParams, len(docs))
	for i, d := range docs {
		items[i] = kb.IngestParams{UserID: user, SourceName: "bench-" + set, Visibility: store.VisibilityPrivate, Title: d.ID, Text: d.Text}
	}
	for i := 0; i < len(items); i += 100 {
		for _, out := range s.IngestBatch(ctx, items[i:min(i+100, len(items))]) {
			if out.Err != nil {
				return r, out.Err
			}
		}
	}
	// The search under test is the HNSW index's, not the exact scan of chunks still waiting for it.
	if _, err := waitIndexed(ctx, st, st.SupportsVectorSearch()); err != nil {
		return r, err
	}
	rankOf := func(hits []kb.Hit, q benchQuestion) int {
		for i, h := range hits {
			if h.DocumentTitle == q.GoldDocID && containsAny(h.ChunkText, q.AnswerTexts) {
				return i + 1
			}
		}
		return 0 // not in the top 10
	}
	add := func(m *kbbench.Metrics, rank int) {
		if rank > 0 && rank <= 5 {
			m.Hit5++
		}
		if rank > 0 {
			m.MRR10 += 1 / float64(rank)
		}
	}
	var lat []float64
	for _, q := range qs {
		p := kb.SearchParams{UserID: user, Query: q.Question, TopK: 10}
		t0 := time.Now()
		hits, err := s.Search(ctx, p)
		if err != nil {
			return r, err
		}
		lat = append(lat, msSince(t0))
		base, err := bm25.Search(ctx, p)
		if err != nil {
			return r, err
		}
		h, b := rankOf(hits, q), rankOf(base, q)
		add(&r.hybrid, h)
		add(&r.bm25, b)
		switch {
		case b > 0 && (h == 0 || h > b):
			r.worse++
		case h > 0 && (b == 0 || h < b):
			r.better++
		}
	}
	n := float64(max(1, len(qs)))
	r.hybrid.Hit5, r.hybrid.MRR10, r.bm25.Hit5, r.bm25.MRR10 = r.hybrid.Hit5/n, r.hybrid.MRR10/n, r.bm25.Hit5/n, r.bm25.MRR10/n
	r.p95 = kbQuantile(lat, 0.95)
	return r, nil
}

func containsAny(text string, answers []string) bool {
	for _, a := range answers {
		if a != "" && strings.Contains(text, a) {
			return true
		}
	}
	return false
}

// hitsFile is -kb-hits: each search's query and hits, one line a search, so two builds' results
// over the same corpus can be compared with diff (the scores to 9 significant digits). A write
// that fails is kept and close reports it: a file missing lines would compare as a change.
type hitsFile struct {
	f   *os.File
	err error // the first write's error
}

// newHitsFile opens path for appending (a run's passes and sizes follow one another), with a line
// naming the pass; an empty path writes nothing.
func newHitsFile(path, driver string, size int) (*hitsFile, error) {
	if path == "" {
		return &hitsFile{}, nil
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("-kb-hits: %w", err)
	}
	_, err = fmt.Fprintf(f, "# %s, %d chunks\n", driver, size)
	return &hitsFile{f: f, err: err}, nil
}

func (h *hitsFile) add(q string, res []kb.Hit) {
	if h.f == nil {
		return
	}
	var b strings.Builder
	b.WriteString(q)
	for _, r := range res {
		fmt.Fprintf(&b, "\t%s %.9g %.9g %.9g", r.ChunkID, r.Scores.Vector, r.Scores.Keyword, r.Scores.Total)
	}
	b.WriteByte('\n')
	if _, err := h.f.WriteString(b.String()); err != nil && h.err == nil {
		h.err = err
	}
}

// close closes the file and returns the first write's error, else the close's.
func (h *hitsFile) close() error {
	if h.f == nil {
		return nil
	}
	err := h.f.Close()
	h.f = nil
	if h.err != nil {
		err = h.err
	}
	if err != nil {
		return fmt.Errorf("-kb-hits: %w", err)
	}
	return nil
}
