package app

import (
	"context"
	"time"

	"github.com/riverqueue/river"

	"github.com/reelforge/reelforge/host/queue"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/internal/backoff"
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

// startQueue starts the job queue. River opens connections of its own at start, which a database
// that is down or out of connections refuses even though the store opened a moment before (a host
// started with two connections free exited with rc 1): then the queue is started in the
// background with the start's back-off (startWait) while the host serves, its jobs waiting in their
// table. Any other error ends the start.
func (h *Host) startQueue(ctx context.Context) error {
	err := h.Queue.Start(ctx)
	if err == nil || h.faultOf(err) == nil {
		return err
	}
	wait, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	h.queueStarting = func() { cancel(); <-done }
	go func() {
		defer close(done)
		retry := backoff.Retry{Policy: startWait, Log: h.Log, What: "queue: start: waiting for the database"}
		for backoff.Sleep(wait, retry.Failed(err, "cause", h.faultOf(err).Cause)) {
			if err = h.Queue.Start(ctx); err == nil {
				retry.Succeeded()
				return
			}
			if h.faultOf(err) == nil {
				h.Log.Error("queue: start: its jobs are not worked on this host", "err", err)
				return
			}
		}
	}()
	return nil
}

// faultOf is the database's state in err (nil: err is about something else), as the store
// driver reads it.
func (h *Host) faultOf(err error) *store.Fault {
	if d, ok := h.Store.(interface{ AsFault(error) *store.Fault }); ok {
		return d.AsFault(err)
	}
	return store.FaultOf(err)
}

// stopQueue stops working jobs, giving those in flight a few seconds: a job cut off is worked
// again (River rescues it), and each of the host's jobs may be done twice. A start still waiting
// for the database is given up first.
func (h *Host) stopQueue() {
	if h.queueStarting != nil {
		h.queueStarting()
	}
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
