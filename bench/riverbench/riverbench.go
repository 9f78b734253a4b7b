// Package riverbench measures River (riverqueue/river v0.51.2) on the two databases as the store
// opens them: SQLite through sqlitestore's own pool (mattn/go-sqlite3, 8 connections, BEGIN
// IMMEDIATE, a 15 s busy timeout) with riversqlite, PostgreSQL through pgstore's pgxpool with
// riverpgxv5. It answers what docs/queue.md decides on: whether River's migrations sit beside
// ours, whether a job commits and rolls back with the write that makes it, whether concurrent
// writers see SQLITE_BUSY, and what a job costs (insert in a transaction, insert to work, worked a
// second). It is measurement only: nothing in the product imports it.
package riverbench

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
)

// Options is one measurement.
type Options struct {
	Jobs      int           // jobs inserted, each in a transaction with one write of ours
	Inserters int           // goroutines inserting (default 4)
	Workers   int           // River's MaxWorkers for the queue (default 100)
	Writers   int           // goroutines writing beside River all along (no job)
	Rate      int           // jobs a second in all; 0: as fast as the inserters go
	Poll      time.Duration // FetchPollInterval (default 50 ms: SQLite has no LISTEN, River polls)
	Cooldown  time.Duration // FetchCooldown (default 5 ms)
	Baseline  bool          // time the write transactions alone, without River
	Log       *slog.Logger  // River's log; warnings are counted (busy ones apart)
}

// Result is what one measurement saw.
type Result struct {
	Driver            string  `json:"driver"`
	Jobs              int     `json:"jobs"`
	MigrationVersions int     `json:"migration_versions"`
	Tables            string  `json:"tables,omitempty"` // SQLite: every table after River's migrations
	RollbackLeftJobs  int     `json:"rollback_left_jobs"`
	BaselineTxPerSec  float64 `json:"baseline_tx_per_s,omitempty"`
	InsertPerSec      float64 `json:"insert_per_s,omitempty"`
	WorkedPerSec      float64 `json:"worked_per_s,omitempty"`
	LatencyP50ms      float64 `json:"latency_p50_ms,omitempty"`
	LatencyP99ms      float64 `json:"latency_p99_ms,omitempty"`
	InsertErrors      int64   `json:"insert_errors"`
	RiverWarnings     int64   `json:"river_warnings"`
	BusyErrors        int64   `json:"busy_errors"` // River's warnings and our writers' errors naming a locked database
	WriterWrites      int64   `json:"writer_writes"`
}

// db is what the measurement needs of one database.
type db struct {
	name    string
	exec    func(ctx context.Context, q string) error
	count   func(ctx context.Context, q string) (int, error)
	migrate func(ctx context.Context) (int, error)
	client  func(cfg *river.Config) (starter, error)
	// change runs one write of ours and, unless baseline, inserts a job in the same transaction;
	// rollback undoes both.
	change func(ctx context.Context, c starter, args NoopArgs, baseline, rollback bool) error
}

type starter interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

var errRollback = errors.New("riverbench: rolled back on purpose")

// SQLite measures on the pool sqlitestore.Driver.SQLDB gives.
func SQLite(ctx context.Context, pool *sql.DB, opt Options) (*Result, error) {
	drv := riversqlite.New(pool)
	d := &db{name: "sqlite",
		exec: func(ctx context.Context, q string) error { _, err := pool.ExecContext(ctx, q); return err },
		count: func(ctx context.Context, q string) (n int, err error) {
			return n, pool.QueryRowContext(ctx, q).Scan(&n)
		},
		migrate: func(ctx context.Context) (int, error) { return migrate(ctx, drv) },
		client:  func(cfg *river.Config) (starter, error) { return river.NewClient(drv, cfg) },
		change: func(ctx context.Context, c starter, args NoopArgs, baseline, rollback bool) error {
			tx, err := pool.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer func() { _ = tx.Rollback() }() // after Commit: sql.ErrTxDone, nothing to undo
			if _, err := tx.ExecContext(ctx, `INSERT INTO riverbench_rows (v) VALUES ('change')`); err != nil {
				return err
			}
			if !baseline {
				if _, err := c.(*river.Client[*sql.Tx]).InsertTx(ctx, tx, args, nil); err != nil {
					return err
				}
			}
			if rollback {
				return tx.Rollback()
			}
			return tx.Commit()
		}}
	return run(ctx, d, opt)
}

// Postgres measures on the pool pgstore.Driver.Pool gives.
func Postgres(ctx context.Context, pool *pgxpool.Pool, opt Options) (*Result, error) {
	drv := riverpgxv5.New(pool)
	d := &db{name: "postgres",
		exec: func(ctx context.Context, q string) error { _, err := pool.Exec(ctx, q); return err },
		count: func(ctx context.Context, q string) (n int, err error) {
			return n, pool.QueryRow(ctx, q).Scan(&n)
		},
		migrate: func(ctx context.Context) (int, error) { return migrate(ctx, drv) },
		client:  func(cfg *river.Config) (starter, error) { return river.NewClient(drv, cfg) },
		change: func(ctx context.Context, c starter, args NoopArgs, baseline, rollback bool) error {
			err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, `INSERT INTO riverbench_rows (v) VALUES ('change')`); err != nil {
					return err
				}
				if !baseline {
					if _, err := c.(*river.Client[pgx.Tx]).InsertTx(ctx, tx, args, nil); err != nil {
						return err
					}
				}
				if rollback {
					return errRollback
				}
				return nil
			})
			if rollback && errors.Is(err, errRollback) {
				return nil
			}
			return err
		}}
	return run(ctx, d, opt)
}

// migrate applies River's migrations (its river_* tables, versions in river_migration) beside ours.
func migrate[TTx any](ctx context.Context, drv riverdriver.Driver[TTx]) (int, error) {
	m, err := rivermigrate.New(drv, nil)
	if err != nil {
		return 0, err
	}
	res, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	if err != nil {
		return 0, err
	}
	return len(res.Versions), nil
}

// NoopArgs is a job that does nothing but note when it started, so what is measured is River.
type NoopArgs struct {
	Enqueued time.Time `json:"enqueued"`
}

// Kind implements river.JobArgs.
func (NoopArgs) Kind() string { return "riverbench_noop" }

type noopWorker struct {
	river.WorkerDefaults[NoopArgs]
	mu   sync.Mutex
	lat  []time.Duration
	left sync.WaitGroup
}

func (w *noopWorker) Work(_ context.Context, j *river.Job[NoopArgs]) error {
	w.mu.Lock()
	w.lat = append(w.lat, time.Since(j.Args.Enqueued))
	w.mu.Unlock()
	w.left.Done()
	return nil
}

// counting counts River's log records at WARN and above, those naming a locked database apart.
type counting struct {
	slog.Handler
	warn, busy *atomic.Int64
}

func (h counting) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		h.warn.Add(1)
		msg := r.Message
		r.Attrs(func(a slog.Attr) bool { msg += " " + a.Value.String(); return true })
		if isBusy(msg) {
			h.busy.Add(1)
		}
	}
	return h.Handler.Handle(ctx, r)
}

func isBusy(msg string) bool {
	return strings.Contains(msg, "database is locked") || strings.Contains(msg, "SQLITE_BUSY")
}

func run(ctx context.Context, d *db, opt Options) (*Result, error) {
	opt = defaults(opt)
	res := &Result{Driver: d.name, Jobs: opt.Jobs}
	if err := d.exec(ctx, `CREATE TABLE IF NOT EXISTS riverbench_rows (v TEXT NOT NULL)`); err != nil {
		return nil, err
	}
	n, err := d.migrate(ctx)
	if err != nil {
		return nil, fmt.Errorf("riverbench: %s: river migrations: %w", d.name, err)
	}
	res.MigrationVersions = n
	if d.name == "sqlite" {
		var names []string
		for _, t := range []string{"schema_migrations", "river_job", "river_migration", "river_queue", "river_leader"} {
			c, err := d.count(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '`+t+`'`)
			if err != nil {
				return nil, err
			}
			if c == 1 {
				names = append(names, t)
			}
		}
		res.Tables = strings.Join(names, ",")
	}
	var warn, busy atomic.Int64
	w := &noopWorker{}
	workers := river.NewWorkers()
	river.AddWorker(workers, w)
	c, err := d.client(&river.Config{Logger: slog.New(counting{opt.Log.Handler(), &warn, &busy}),
		Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: opt.Workers}},
		Workers: workers, FetchPollInterval: opt.Poll, FetchCooldown: opt.Cooldown})
	if err != nil {
		return nil, err
	}

	before, err := d.count(ctx, `SELECT count(*) FROM river_job`)
	if err != nil {
		return nil, err
	}
	if err := d.change(ctx, c, NoopArgs{Enqueued: time.Now()}, false, true); err != nil {
		return nil, err
	}
	after, err := d.count(ctx, `SELECT count(*) FROM river_job`)
	if err != nil {
		return nil, err
	}
	res.RollbackLeftJobs = after - before

	if opt.Baseline {
		start := time.Now()
		if err := inserts(ctx, opt, func(int) error {
			return d.change(ctx, c, NoopArgs{}, true, false)
		}); err != nil {
			return nil, err
		}
		res.BaselineTxPerSec = float64(opt.Jobs) / time.Since(start).Seconds()
		return res, nil
	}

	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	stop := make(chan struct{})
	var writers sync.WaitGroup
	var wrote, writerBusy atomic.Int64
	for range opt.Writers {
		writers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				switch err := d.exec(ctx, `INSERT INTO riverbench_rows (v) VALUES ('writer')`); {
				case err == nil:
					wrote.Add(1)
				case isBusy(err.Error()):
					writerBusy.Add(1)
				}
			}
		})
	}
	w.left.Add(opt.Jobs)
	start := time.Now()
	var insertErrs atomic.Int64
	_ = inserts(ctx, opt, func(int) error {
		if err := d.change(ctx, c, NoopArgs{Enqueued: time.Now()}, false, false); err != nil {
			insertErrs.Add(1)
			w.left.Done()
		}
		return nil
	})
	inserted := time.Since(start)
	done := make(chan struct{})
	go func() { w.left.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	worked := time.Since(start)
	close(stop)
	writers.Wait()
	if err := c.Stop(context.WithoutCancel(ctx)); err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("riverbench: %s: %d jobs not worked: %w", d.name, opt.Jobs-len(w.lat), ctx.Err())
	}
	slices.Sort(w.lat)
	pct := func(p float64) float64 {
		return float64(w.lat[min(len(w.lat)-1, int(float64(len(w.lat))*p))].Microseconds()) / 1000
	}
	res.InsertPerSec = float64(opt.Jobs) / inserted.Seconds()
	res.WorkedPerSec = float64(opt.Jobs) / worked.Seconds()
	if len(w.lat) > 0 {
		res.LatencyP50ms, res.LatencyP99ms = pct(.5), pct(.99)
	}
	res.InsertErrors, res.RiverWarnings = insertErrs.Load(), warn.Load()
	res.BusyErrors, res.WriterWrites = busy.Load()+writerBusy.Load(), wrote.Load()
	return res, nil
}

// inserts calls change opt.Jobs times over opt.Inserters goroutines, paced to opt.Rate.
func inserts(ctx context.Context, opt Options, change func(i int) error) error {
	var g sync.WaitGroup
	var first atomic.Value
	per := opt.Jobs / opt.Inserters
	var tick *time.Ticker
	if opt.Rate > 0 {
		tick = time.NewTicker(time.Second / time.Duration(opt.Rate))
		defer tick.Stop()
	}
	for k := range opt.Inserters {
		g.Go(func() {
			for i := range per {
				if tick != nil {
					select {
					case <-tick.C:
					case <-ctx.Done():
						return
					}
				}
				if err := change(k*per + i); err != nil {
					first.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	g.Wait()
	if err, ok := first.Load().(error); ok {
		return err
	}
	return nil
}

func defaults(o Options) Options {
	if o.Inserters <= 0 {
		o.Inserters = 4
	}
	o.Jobs -= o.Jobs % o.Inserters
	if o.Workers <= 0 {
		o.Workers = 100
	}
	if o.Poll <= 0 {
		o.Poll = 50 * time.Millisecond
	}
	if o.Cooldown <= 0 {
		o.Cooldown = 5 * time.Millisecond
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return o
}

// Print writes r to out as one JSON line, as the other benches do.
func Print(out io.Writer, r *Result) error {
	return json.NewEncoder(out).Encode(map[string]any{"bench": "river", "result": r})
}
