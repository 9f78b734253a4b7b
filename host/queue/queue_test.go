package queue_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/reelforge/reelforge/host/queue"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/pgstore"
	"github.com/reelforge/reelforge/host/store/sqlitestore"
	"github.com/reelforge/reelforge/host/store/storetest"
	"github.com/reelforge/reelforge/internal/testtool"
)

// opener opens the same database again (a second host, or this one restarted); it may be called
// from several goroutines at once.
type opener func(t *testing.T) (store.Driver, error)

func mustOpen(t *testing.T, open opener) store.Driver {
	t.Helper()
	d, err := open(t)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// databases gives, for each driver, an opener of one fresh database.
var databases = map[string]func(t *testing.T) opener{
	"sqlite": func(t *testing.T) opener {
		path := filepath.Join(t.TempDir(), "queue.db")
		return func(t *testing.T) (store.Driver, error) {
			d, err := sqlitestore.Open(context.Background(), path, sqlitestore.Options{})
			if err != nil {
				return nil, err
			}
			t.Cleanup(func() { d.Close() })
			return d, nil
		}
	},
	"postgres": func(t *testing.T) opener {
		url, schema := storetest.PostgresURL(t), storetest.SchemaName()
		t.Cleanup(func() { storetest.DropSchema(url, schema) })
		return func(t *testing.T) (store.Driver, error) {
			d, err := pgstore.Open(context.Background(), url, pgstore.Options{Schema: schema, NoPrewarm: true})
			if err != nil {
				return nil, err
			}
			t.Cleanup(func() { d.Close() })
			return d, nil
		}
	},
}

func forEachDatabase(t *testing.T, fn func(t *testing.T, open opener)) {
	for name, db := range databases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, db(t))
		})
	}
}

// noteArgs is a job that records its user id.
type noteArgs struct {
	UserID string `json:"user_id"`
}

func (noteArgs) Kind() string { return "queue_test_note" }

type noteWorker struct {
	river.WorkerDefaults[noteArgs]
	mu    sync.Mutex
	seen  []string
	fails atomic.Int32 // fail this many attempts first
}

func (w *noteWorker) Work(_ context.Context, j *river.Job[noteArgs]) error {
	if w.fails.Add(-1) >= 0 {
		return errors.New("failing on purpose")
	}
	w.mu.Lock()
	w.seen = append(w.seen, j.Args.UserID)
	w.mu.Unlock()
	return nil
}

func (w *noteWorker) saw() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.seen...)
}

func newQueue(t *testing.T, d store.Driver) (*queue.Queue, *noteWorker) {
	t.Helper()
	q, err := queue.New(queue.Params{Store: d, Poll: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	w := &noteWorker{}
	queue.AddWorker(q, w)
	return q, w
}

var errRollback = errors.New("rolled back on purpose")

// A job inserted in a store transaction commits with the change that made it and is worked; one
// whose transaction rolls back leaves no job.
func TestInsertTxCommitsWithTheChange(t *testing.T) {
	forEachDatabase(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		d := mustOpen(t, open)
		q, w := newQueue(t, d)
		insert := func(rollback bool) string {
			u := &store.User{ID: storetest.SchemaName(), Email: storetest.SchemaName() + "@example.com", Username: storetest.SchemaName(),
				PasswordHash: "x", Role: store.RoleFreeUser}
			err := store.InTx(ctx, d, func(tx store.Driver) error {
				if err := tx.CreateUser(ctx, u); err != nil {
					return err
				}
				if _, err := q.InsertTx(ctx, tx, noteArgs{UserID: u.ID}, nil); err != nil {
					return err
				}
				if rollback {
					return errRollback
				}
				return nil
			})
			if rollback != errors.Is(err, errRollback) || (!rollback && err != nil) {
				t.Fatalf("InTx(rollback %v) = %v", rollback, err)
			}
			return u.ID
		}
		gone, kept := insert(true), insert(false)
		if _, err := q.InsertTx(ctx, d, noteArgs{}, nil); err == nil {
			t.Error("InsertTx outside a transaction: no error")
		}
		counts, err := q.Counts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if counts[string(rivertype.JobStateAvailable)] != 1 {
			t.Fatalf("counts before Start = %v, want 1 available (the rolled-back job left none)", counts)
		}
		if err := q.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { q.Stop(context.Background()) })
		testtool.Eventually(t, 30*time.Second, "the committed job worked", func() bool {
			c, err := q.Counts(ctx)
			return err == nil && c[string(rivertype.JobStateCompleted)] == 1
		})
		if got := w.saw(); got[0] != kept || got[0] == gone {
			t.Errorf("worked %v, want [%s]", got, kept)
		}
		jobs, err := q.List(ctx, queue.ListParams{})
		if err != nil || len(jobs) != 1 || jobs[0].Kind != "queue_test_note" {
			t.Fatalf("List = %v, %v; want the one job", jobs, err)
		}
	})
}

// A job that fails is tried again after the queue's jittered back-off, then completes.
func TestFailedJobRetried(t *testing.T) {
	forEachDatabase(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		q, w := newQueue(t, mustOpen(t, open))
		w.fails.Store(1)
		if err := q.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { q.Stop(context.Background()) })
		res, err := q.Insert(ctx, noteArgs{UserID: "u"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var jobs []*rivertype.JobRow
		testtool.Eventually(t, 60*time.Second, "the job completed on its second attempt", func() bool {
			var err error
			jobs, err = q.List(ctx, queue.ListParams{States: []rivertype.JobState{rivertype.JobStateCompleted}})
			return err == nil && len(jobs) == 1
		})
		if jobs[0].ID != res.Job.ID || len(w.saw()) != 1 {
			t.Fatalf("completed %d (inserted %d), worked %v", jobs[0].ID, res.Job.ID, w.saw())
		}
		j := jobs[0]
		if j.Attempt != 2 || len(j.Errors) != 1 {
			t.Fatalf("attempt %d with %d errors, want 2 and 1", j.Attempt, len(j.Errors))
		}
		// The second attempt came after the policy's first step (half of Min at least).
		if gap := j.AttemptedAt.Sub(j.Errors[0].At); gap < queue.Retries.Min/2 {
			t.Errorf("retried %s after the failure, want at least %s", gap, queue.Retries.Min/2)
		}
	})
}

// Hosts that open one database together each apply River's migrations under the store's
// migration lock: every open succeeds, and a queue works on it.
func TestMigrationsWhenHostsStartTogether(t *testing.T) {
	forEachDatabase(t, func(t *testing.T, open opener) {
		var wg sync.WaitGroup
		drivers := make([]store.Driver, 3)
		errs := make([]error, len(drivers))
		for i := range drivers {
			wg.Go(func() { drivers[i], errs[i] = open(t) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("concurrent opens: %v", err)
		}
		q, _ := newQueue(t, drivers[2])
		if _, err := q.Insert(context.Background(), noteArgs{}, nil); err != nil {
			t.Fatalf("Insert after concurrent opens: %v", err)
		}
	})
}
