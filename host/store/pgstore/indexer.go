package pgstore

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/reelforge/reelforge/host/store"
)

// The vector indexer. An ingest writes its embeddings with vector_indexed FALSE, outside the
// partial HNSW index (vectorIndex), so it does not pay the graph insert (about 0.65 ms of the
// server's CPU a chunk, most of what a PostgreSQL ingest cost); this worker then sets the flag a
// batch at a time, which inserts those rows into the graph. A search never waits for it: its
// vector leg adds an exact scan of the rows still pending (pendingIndexDDL) to the index scan, so a
// chunk is found from the commit of its ingest on.
//
// Each host of a database runs one; a batch runs in a transaction holding an advisory lock of the
// schema (pg_try_advisory_xact_lock), so one host indexes at a time and the others find the lock
// taken and wait for their next turn, and it takes its rows FOR UPDATE SKIP LOCKED, so a row being
// deleted or indexed elsewhere is left alone. A host that dies in a batch leaves its rows pending
// (the transaction rolls back) for the next one.

const (
	// indexBatch is the rows one indexer transaction moves into the graph: about 0.1 to 0.3 s of
	// the server's work, short enough that a delete waiting on a row lock does not wait long.
	indexBatch = 256
	// indexSettle is how long the indexer lets a stream of writes go on before it indexes: an
	// ingest and the graph inserts then do not compete for the server's cores while writes keep
	// coming, unless the pending rows pass indexBacklog.
	indexSettle = 300 * time.Millisecond
	// indexBacklog bounds the rows a search scans exactly: past it the indexer works during
	// writes too. An exact scan of 2,000 half-precision rows costs a few ms.
	indexBacklog = 2000
	// indexPoll is how often the indexer looks for rows without a write of its own host to wake
	// it: those of other hosts, and those a host left pending when it stopped.
	indexPoll = 5 * time.Second
	// indexerLockClass is the first key of the indexer's advisory lock; the second is the hash of
	// the schema, so each schema of a database (the tests use one each) has its own indexer.
	indexerLockClass = 731_622_046
)

// indexer is the background worker of one Driver.
type indexer struct {
	d     *Driver
	log   *slog.Logger
	wake  chan struct{} // a write of this host committed rows to index
	stop  context.CancelFunc
	done  chan struct{}
	mu    sync.Mutex
	dirty int // rows this host wrote since the indexer last drained (an estimate of the backlog)
}

// startIndexer runs the indexer of d until stopIndexer.
func (d *Driver) startIndexer(log *slog.Logger) {
	ctx, cancel := context.WithCancel(context.Background())
	ix := &indexer{d: d, log: log, wake: make(chan struct{}, 1), stop: cancel, done: make(chan struct{})}
	d.idx = ix
	go ix.run(ctx)
}

// stopIndexer ends the indexer and waits for it (a batch in flight rolls back).
func (d *Driver) stopIndexer() {
	if d.idx == nil {
		return
	}
	d.idx.stop()
	<-d.idx.done
}

// wrote tells the indexer that n rows to index were committed.
func (ix *indexer) wrote(n int) {
	if ix == nil || n == 0 {
		return
	}
	ix.mu.Lock()
	ix.dirty += n
	ix.mu.Unlock()
	select {
	case ix.wake <- struct{}{}:
	default:
	}
}

func (ix *indexer) run(ctx context.Context) {
	defer close(ix.done)
	poll := time.NewTicker(indexPoll)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-poll.C:
		case <-ix.wake:
			if !ix.settle(ctx) {
				return
			}
		}
		ix.drain(ctx)
	}
}

// settle waits until no write has woken the indexer for indexSettle, or the backlog passes
// indexBacklog; false when the indexer is stopped meanwhile.
func (ix *indexer) settle(ctx context.Context) bool {
	t := time.NewTimer(indexSettle)
	defer t.Stop()
	for {
		ix.mu.Lock()
		backlog := ix.dirty
		ix.mu.Unlock()
		if backlog >= indexBacklog {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-ix.wake:
			t.Reset(indexSettle)
		case <-t.C:
			return true
		}
	}
}

// drain indexes batches until none is left, another host holds the lock, or the indexer stops.
func (ix *indexer) drain(ctx context.Context) {
	for ctx.Err() == nil {
		ix.mu.Lock()
		ix.dirty = 0
		ix.mu.Unlock()
		n, err := ix.d.IndexPendingVectors(ctx, indexBatch)
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, context.Canceled) {
				ix.log.Warn("pgstore: vector indexer", "err", err)
			}
			return // the next write or poll tries again
		}
		if n < indexBatch {
			return
		}
	}
}

// IndexPendingVectors moves up to n embeddings written since into the HNSW index and returns how
// many, in one transaction: 0 when none is pending or another host's indexer holds this schema's
// lock. The background indexer calls it; tests call it to index at a known moment.
func (d *Driver) IndexPendingVectors(ctx context.Context, n int) (int, error) {
	if !d.vector {
		return 0, nil
	}
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after Commit it is a no-op
	var mine bool
	if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1, hashtext(current_schema()))`, int32(indexerLockClass)).Scan(&mine); err != nil {
		return 0, err
	}
	if !mine {
		return 0, nil
	}
	tag, err := tx.Exec(ctx, `UPDATE knowledge_embeddings e SET vector_indexed = TRUE FROM (
			SELECT chunk_id, model FROM knowledge_embeddings WHERE NOT vector_indexed ORDER BY chunk_id LIMIT $1 FOR UPDATE SKIP LOCKED) p
		WHERE e.chunk_id = p.chunk_id AND e.model = p.model`, n)
	if err != nil {
		return 0, err
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, err
	}
	return int(tag.RowsAffected()), nil
}

// VectorIndexStatus implements store.VectorIndexReporter: the HNSW index's size on disk, the
// server's shared_buffers, and the rows pending, counted up to 10,000 (for /health, which should
// stay cheap).
func (d *Driver) VectorIndexStatus(ctx context.Context) (store.VectorIndexStatus, error) {
	var st store.VectorIndexStatus
	if !d.vector {
		return st, store.ErrNotSupported
	}
	err := d.pool.QueryRow(ctx, `SELECT COALESCE(pg_relation_size(to_regclass($1)), 0),
			(SELECT setting::bigint * pg_size_bytes(COALESCE(NULLIF(unit, ''), '1B')) FROM pg_settings WHERE name = 'shared_buffers'),
			(SELECT COUNT(*) FROM (SELECT 1 FROM knowledge_embeddings WHERE NOT vector_indexed LIMIT 10000) p)`,
		vectorIndex).Scan(&st.IndexBytes, &st.SharedBufferBytes, &st.Pending)
	return st, err
}

// PendingVectors is the number of embeddings not in the HNSW index yet.
func (d *Driver) PendingVectors(ctx context.Context) (int64, error) {
	var n int64
	err := d.pool.QueryRow(ctx, `SELECT COUNT(*) FROM knowledge_embeddings WHERE NOT vector_indexed`).Scan(&n)
	return n, err
}
