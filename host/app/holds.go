package app

import (
	"context"
	"sync"

	"github.com/reelforge/reelforge/internal/backoff"
	"github.com/reelforge/reelforge/internal/lease"
)

// interruptedIngest is the reason kept on a document whose ingest died with its host. It fits every
// way a document comes in (a file upload, /text, batch/text): sending it again ingests it.
const interruptedIngest = "interrupted: the host ingesting it stopped before it finished; send it again (the same file or text) to ingest it"

// keepHolds takes back what this host's previous life held in the request path (documents being
// ingested, Idempotency-Keys of requests it never answered), then, until the returned stop is
// called, renews the leases of what this life holds. The ingests of other hosts whose leases ran
// out are failed by the periodic ingest_recovery job (queue.go). Runs and jobs are the runs
// service's (runs.Service.TakeBack).
func (h *Host) keepHolds(ctx context.Context) (stop func()) {
	if n, err := h.Store.FailAbandonedDocuments(ctx, h.HostID, interruptedIngest); err != nil {
		h.Log.Warn("holds: fail the ingests of this host's previous life", "err", err)
	} else if n > 0 {
		h.Log.Warn("holds: ingests of this host's previous life failed as interrupted", "documents", n)
	}
	if n, err := h.Store.ReleaseIdempotencyKeysOf(ctx, h.HostID); err != nil {
		h.Log.Warn("holds: release the Idempotency-Keys of this host's previous life", "err", err)
	} else if n > 0 {
		h.Log.Warn("holds: Idempotency-Keys of requests this host's previous life never answered released", "keys", n)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		retry := backoff.Retry{Log: h.Log, What: "holds: renew ingest and Idempotency-Key leases"}
		lease.Keep(ctx, h.Config.Lease, func(ctx context.Context) bool {
			_, err := h.Store.RenewDocumentLeases(ctx, h.Life, h.Config.Lease)
			if err == nil {
				_, err = h.Store.RenewIdempotencyLeases(ctx, h.Life, h.Config.Lease)
			}
			if err != nil {
				if ctx.Err() == nil {
					retry.Failed(err)
				}
				return true
			}
			retry.Succeeded()
			return true // a failed renewal is tried again at the next tick, before the lease runs out
		})
	}()
	return func() {
		cancel()
		wg.Wait()
	}
}
