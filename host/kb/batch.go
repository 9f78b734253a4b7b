package kb

import (
	"context"
	"crypto/sha256"
	"sync"
)

// BatchWorkers is how many items of one IngestBatch are ingested at once on a database whose
// writes run side by side (store.Driver.ParallelWrites). A serial ingest on PostgreSQL leaves the
// host and the server idle much of the time, each waiting on the other (round trips, the commit's
// WAL flush); two at once keep both busy, and on the project's two-core machine four gained
// nothing more while holding up to all four connections of the default pool. On SQLite, whose
// writers take turns, items go one at a time: there, four at once were slower (waiting writers
// sleep in the busy handler). Figures in BENCHMARKS.md, ninth session.
const BatchWorkers = 2

// batchWorkers is the number of items IngestBatch runs at once on this service's store.
func (s *Service) batchWorkers() int {
	if s.st.ParallelWrites() {
		return BatchWorkers
	}
	return 1
}

// BatchOutcome is the result of one item of IngestBatch: Result, or Err.
type BatchOutcome struct {
	Result *IngestResult
	Err    error
}

// IngestBatch ingests items, BatchWorkers at a time (one at a time on SQLite), and returns their
// outcomes in item order. One item's failure does not stop the others.
//
// Items that would land as the same document (same content into the same source) run one after
// the other, in item order, as they would in a serial loop: the first indexes it and the later
// ones are duplicates of the indexed document, not of one still parsing.
func (s *Service) IngestBatch(ctx context.Context, items []IngestParams) []BatchOutcome {
	type sameDoc struct {
		user, project, source string
		content               [sha256.Size]byte
	}
	out := make([]BatchOutcome, len(items))
	prev := map[sameDoc]chan struct{}{} // the last item seen of each document, closed when it is done
	slots := make(chan struct{}, s.batchWorkers())
	var wg sync.WaitGroup
	for i, p := range items {
		p.fillDefaults()
		key := sameDoc{p.UserID, p.ProjectID, p.SourceName, sha256.Sum256(p.content())}
		wait, done := prev[key], make(chan struct{})
		prev[key] = done
		wg.Go(func() {
			defer close(done)
			if wait != nil {
				// Wait before taking a slot: the item waited on holds one or has finished.
				<-wait
			}
			slots <- struct{}{}
			defer func() { <-slots }()
			res, err := s.Ingest(ctx, p)
			out[i] = BatchOutcome{Result: res, Err: err}
		})
	}
	wg.Wait()
	return out
}
