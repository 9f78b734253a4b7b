package app

import (
	"context"
	"time"

	"github.com/riverqueue/river"

	"github.com/reelforge/reelforge/host/queue"
)

// newQueue builds the host's River client (host/queue) with the workers of the host's durable
// jobs: ingest recovery, every lease period.
func (h *Host) newQueue() error {
	q, err := queue.New(queue.Params{Store: h.Store, Log: h.Log})
	if err != nil {
		return err
	}
	queue.AddWorker(q, &ingestRecovery{h: h})
	q.AddPeriodic(h.Config.Lease, func() river.JobArgs { return ingestRecoveryArgs{} })
	h.Queue = q
	return nil
}

// stopQueue stops working jobs, giving those in flight a few seconds: a job cut off is worked
// again (River rescues it), and each of the host's jobs may be done twice.
func (h *Host) stopQueue() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.Queue.Stop(ctx); err != nil {
		h.Log.Warn("stop the queue", "err", err)
	}
}

// ingestRecoveryArgs is the periodic job that fails, as interrupted, the documents whose ingest
// died with its host (their holder's lease ran out): sending them again ingests them. One host
// of those sharing the database inserts it each period (River's leader, unique by period).
type ingestRecoveryArgs struct{}

// Kind implements river.JobArgs.
func (ingestRecoveryArgs) Kind() string { return "ingest_recovery" }

type ingestRecovery struct {
	river.WorkerDefaults[ingestRecoveryArgs]
	h *Host
}

// Timeout implements river.Worker: one UPDATE, well under a lease.
func (*ingestRecovery) Timeout(*river.Job[ingestRecoveryArgs]) time.Duration { return time.Minute }

// Work implements river.Worker. A database error fails the attempt; River tries it again after
// the queue's back-off, and the next period's job comes anyway.
func (w *ingestRecovery) Work(ctx context.Context, _ *river.Job[ingestRecoveryArgs]) error {
	n, err := w.h.Store.FailAbandonedDocuments(ctx, "", interruptedIngest)
	if err != nil {
		return err
	}
	if n > 0 {
		w.h.Log.Warn("holds: ingests whose host stopped failed as interrupted", "documents", n)
	}
	return nil
}
