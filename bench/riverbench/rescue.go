package riverbench

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivertype"
)

// Rescue measures how long River takes to work again a job whose host died while working it: it
// inserts a job, marks it running by a client that no longer exists (as a killed host leaves it),
// starts a client whose RescueStuckJobsAfter is rescueAfter (its JobTimeout just under), and
// answers the time from the dead claim until the job is worked again. River's rescuer looks every
// 30 seconds (not configurable) and rescues jobs running longer than RescueStuckJobsAfter, which
// must exceed the longest job's time-out, or a job still at work is run a second time.
func Rescue(ctx context.Context, pool *sql.DB, rescueAfter time.Duration) (time.Duration, error) {
	drv := riversqlite.New(pool)
	w := &noopWorker{}
	workers := river.NewWorkers()
	river.AddWorker(workers, w)
	c, err := river.NewClient(drv, &river.Config{Queues: map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 1}},
		Workers: workers, FetchPollInterval: 50 * time.Millisecond, FetchCooldown: 10 * time.Millisecond,
		JobTimeout: rescueAfter - time.Second, RescueStuckJobsAfter: rescueAfter,
		RetryPolicy: fixedRetry{}})
	if err != nil {
		return 0, err
	}
	res, err := c.Insert(ctx, NoopArgs{}, &river.InsertOpts{MaxAttempts: 2})
	if err != nil {
		return 0, err
	}
	claimed := time.Now()
	if _, err := pool.ExecContext(ctx, `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = ?,
		attempted_by = '["dead-host"]' WHERE id = ?`, claimed.UTC().Format("2006-01-02 15:04:05.999"), res.Job.ID); err != nil {
		return 0, err
	}
	w.left.Add(1)
	if err := c.Start(ctx); err != nil {
		return 0, err
	}
	defer c.Stop(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { w.left.Wait(); close(done) }()
	select {
	case <-done:
		return time.Since(claimed), nil
	case <-ctx.Done():
		return 0, fmt.Errorf("riverbench: the dead host's job was not worked again within the wait: %w", ctx.Err())
	}
}

// fixedRetry retries at once, so that what Rescue measures is the rescue.
type fixedRetry struct{}

func (fixedRetry) NextRetry(*rivertype.JobRow) time.Time { return time.Now() }
