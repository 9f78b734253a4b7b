// Package queue is the host's durable background work: one River client (riverqueue/river) per
// host, on the database the store opened, riverpgxv5 on PostgreSQL and riversqlite on SQLite.
// River's tables sit beside ours; the store drivers apply its migrations after ours, under their
// migration lock (pgstore, sqlitestore). docs/queue.md says what runs on it and why.
//
// A service inserts a job in the transaction of the change that makes it (InsertTx with the tx
// store.InTx handed it), so the job commits or rolls back with that change. The host registers
// the workers (AddWorker) and the periodic jobs (AddPeriodic) before Start; the commands that only
// read the queue (`reelforge queue`) open it with no worker and never start it.
package queue

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivertype"

	"github.com/reelforge/reelforge/internal/backoff"
)

// Retries is the back-off between the attempts of a failed job: River's retry policy is
// internal/backoff's jittered one, so jobs that failed together (the database down) do not all
// come back at once. A second after the first failure, doubling to ten minutes.
var Retries = backoff.Policy{Min: time.Second, Max: 10 * time.Minute}

// retryPolicy is River's ClientRetryPolicy on a backoff.Policy.
type retryPolicy struct{ p backoff.Policy }

// NextRetry implements river.ClientRetryPolicy. job.Errors holds the failures before this one.
func (r retryPolicy) NextRetry(job *rivertype.JobRow) time.Time {
	return time.Now().UTC().Add(r.p.Wait(len(job.Errors) + 1))
}

// Params configure New.
type Params struct {
	// Store is the store the host opened: a *pgstore.Driver or a *sqlitestore.Driver (what they
	// offer River is read through pgPool and sqlPool, so this package does not import them).
	Store any
	Log   *slog.Logger // nil: no log
	// Workers bounds the jobs this host works at once; 0: 10.
	Workers int
	// Poll is how often an idle host looks for jobs; 0: a second. On PostgreSQL an insert also
	// wakes the hosts at once (LISTEN/NOTIFY); SQLite has no such signal, so poll is the wait.
	Poll time.Duration
}

// The store drivers' accessors River needs: the pool the driver runs on and the transaction a
// Driver handed by InTx runs in.
type (
	pgPool  interface{ Pool() *pgxpool.Pool }
	sqlPool interface{ SQLDB() *sql.DB }
	pgTx    interface{ PgxTx() pgx.Tx }
	schemed interface{ Schema() string }
	sqlTx   interface{ SQLTx() *sql.Tx }
)

// Queue is the host's River client. Create it with New; safe for concurrent use.
type Queue struct {
	workers *river.Workers
	c       client
	schema  string // River's tables' schema ("": the search path's)
}

// client is what Queue uses of a river.Client[TTx], whichever TTx its driver has.
type client interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
	Insert(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error)
	JobList(ctx context.Context, params *river.JobListParams) (*river.JobListResult, error)
	PeriodicJobs() *river.PeriodicJobBundle
	insertTx(ctx context.Context, tx any, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error)
	executor() riverdriver.Executor
}

// typed is a river.Client on a driver whose transactions are TTx; txOf finds TTx in a store
// transaction.
type typed[TTx any] struct {
	*river.Client[TTx]
	txOf func(tx any) (TTx, bool)
}

func (t typed[TTx]) insertTx(ctx context.Context, tx any, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error) {
	native, ok := t.txOf(tx)
	if !ok {
		return nil, fmt.Errorf("queue: %T is not a transaction of the store the queue runs on (InsertTx takes the tx store.InTx hands over)", tx)
	}
	return t.InsertTx(ctx, native, args, opts)
}

func (t typed[TTx]) executor() riverdriver.Executor { return t.Driver().GetExecutor() }

// New builds the host's River client on st. It works nothing until Start.
func New(p Params) (*Queue, error) {
	log := p.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	q := &Queue{workers: river.NewWorkers()}
	cfg := &river.Config{
		Logger:            slog.New(newRiverLog(log.With("component", "river").Handler())),
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: cmpOr(p.Workers, 10)}},
		Workers:           q.workers,
		RetryPolicy:       retryPolicy{Retries},
		FetchPollInterval: cmpOr(p.Poll, time.Second),
	}
	// River's least wait between fetches (100 ms by default) may not exceed the poll.
	cfg.FetchCooldown = min(cfg.FetchPollInterval, 100*time.Millisecond)
	// No LISTEN: River's listener would take a connection out of the pool for good, one more per
	// host beside the host's own LISTEN and leader lock, and on a server with a connection or two
	// free it could take the pool's last (issue 38: the host then answered 503 for good). Polling
	// costs a job up to FetchPollInterval before it is worked, and a new River leader up to 5 s.
	cfg.PollOnly = true
	if st, ok := p.Store.(schemed); ok {
		// A PostgreSQL schema of its own (tests): River's tables are there, not in public.
		cfg.Schema = st.Schema()
	}
	q.schema = cfg.Schema
	var err error
	switch st := p.Store.(type) {
	case pgPool:
		var c *river.Client[pgx.Tx]
		c, err = river.NewClient(riverpgxv5.New(st.Pool()), cfg)
		q.c = typed[pgx.Tx]{c, func(tx any) (pgx.Tx, bool) {
			t, ok := tx.(pgTx)
			if !ok || t.PgxTx() == nil {
				return nil, false
			}
			return t.PgxTx(), true
		}}
	case sqlPool:
		var c *river.Client[*sql.Tx]
		c, err = river.NewClient(riversqlite.New(st.SQLDB()), cfg)
		q.c = typed[*sql.Tx]{c, func(tx any) (*sql.Tx, bool) {
			t, ok := tx.(sqlTx)
			if !ok || t.SQLTx() == nil {
				return nil, false
			}
			return t.SQLTx(), true
		}}
	default:
		return nil, fmt.Errorf("queue: no River driver for a store of type %T", p.Store)
	}
	if err != nil {
		return nil, fmt.Errorf("queue: %w", err)
	}
	return q, nil
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// AddWorker registers w as the worker of its jobs' kind; before Start.
func AddWorker[T river.JobArgs](q *Queue, w river.Worker[T]) { river.AddWorker(q.workers, w) }

// AddPeriodic schedules a job made by newArgs every interval, the first at Start; before Start.
// River inserts it on the host that leads (one of those sharing the database), and the job is
// unique by period, so that a change of leader within a period adds no second one. A failed one
// is discarded, not retried: the next period's job does its work.
func (q *Queue) AddPeriodic(interval time.Duration, newArgs func() river.JobArgs) {
	// One attempt: the next period's job is the retry.
	opts := &river.InsertOpts{MaxAttempts: 1, UniqueOpts: river.UniqueOpts{ByPeriod: interval}}
	q.c.PeriodicJobs().Add(river.NewPeriodicJob(river.PeriodicInterval(interval),
		func() (river.JobArgs, *river.InsertOpts) { return newArgs(), opts },
		&river.PeriodicJobOpts{RunOnStart: true}))
}

// Start starts working jobs (and, on the leader, the periodic jobs and River's upkeep: rescue of
// stuck jobs, clean-up of old finished ones).
func (q *Queue) Start(ctx context.Context) error {
	if err := q.c.Start(ctx); err != nil {
		return fmt.Errorf("queue: start: %w", err)
	}
	return nil
}

// Stop stops fetching jobs and waits for those in flight until ctx ends; River then cancels them
// (a job cut off is rescued and tried again later, by this host's next life or another).
func (q *Queue) Stop(ctx context.Context) error {
	err := q.c.Stop(ctx)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("queue: stop: %w", err)
	}
	return nil
}

// Insert inserts a job on its own.
func (q *Queue) Insert(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error) {
	return q.c.Insert(ctx, args, opts)
}

// InsertTx inserts a job in tx, the transaction store.InTx handed a service (as the service's own
// store interface): the job commits or rolls back with the change that makes it.
func (q *Queue) InsertTx(ctx context.Context, tx any, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error) {
	return q.c.insertTx(ctx, tx, args, opts)
}

// States are River's job states, in the order a job goes through them.
var States = []rivertype.JobState{
	rivertype.JobStateScheduled, rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning,
	rivertype.JobStateRetryable, rivertype.JobStateCompleted, rivertype.JobStateCancelled, rivertype.JobStateDiscarded,
}

// Counts counts the jobs in each of River's states (every state of States, zero included), by
// the state's name.
func (q *Queue) Counts(ctx context.Context) (map[string]int, error) {
	got, err := q.c.executor().JobCountByAllStates(ctx, &riverdriver.JobCountByAllStatesParams{Schema: q.schema})
	if err != nil {
		return nil, fmt.Errorf("queue: count jobs: %w", err)
	}
	out := make(map[string]int, len(States))
	for _, s := range States {
		out[string(s)] = got[s]
	}
	return out, nil
}

// ListParams filter List.
type ListParams struct {
	States []rivertype.JobState // none: every state
	Kinds  []string             // none: every kind
	Limit  int                  // 0: 100
}

// List lists jobs, the most recent first.
func (q *Queue) List(ctx context.Context, p ListParams) ([]*rivertype.JobRow, error) {
	lp := river.NewJobListParams().First(cmpOr(p.Limit, 100)).OrderBy(river.JobListOrderByID, river.SortOrderDesc)
	if len(p.States) > 0 {
		lp = lp.States(p.States...)
	}
	if len(p.Kinds) > 0 {
		lp = lp.Kinds(p.Kinds...)
	}
	res, err := q.c.JobList(ctx, lp)
	if err != nil {
		return nil, fmt.Errorf("queue: list jobs: %w", err)
	}
	return res.Jobs, nil
}
