// IngestBatch: many documents of one call, in groups that share their transactions, the next
// group parsed and embedded while the previous one is written.

package kb

import (
	"context"
	"crypto/sha256"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/reelforge/reelforge/host/store"
)

// BatchGroup is how many documents of an IngestBatch share a transaction: the documents are added
// in one (store.AddDocuments; on SQLite all groups' documents in one, see IngestBatch) and their
// chunks written in another (store.WriteChunksBatch). A
// document ingested alone costs two commits and about a dozen round trips to the database, which
// for short documents (a few KB) was most of an ingest on PostgreSQL; a group pays them once.
const BatchGroup = 16

// batchWriters is how many groups of an IngestBatch are written at once on a database whose
// writers do not take turns (PostgreSQL). With one, the write stage (encoding the group's chunks
// and vectors, then the server's insert, about 0.2 s of the server's CPU a MB) was the pipeline's
// slowest: the stage that adds and embeds the next group waited on it about half of the time. With
// two, one group's insert runs on the server while the host encodes and sends the next, on a
// second connection: batch/text's ingest of 5,000 chunks took 9.3 s instead of 13.5 on the loaded
// machine (BENCHMARKS.md; the target it serves: ≥ 4 MB/s through batch/text on pgvector).
const batchWriters = 2

// BatchOutcome is the result of one item of IngestBatch: Result, or Err.
type BatchOutcome struct {
	Result *IngestResult
	Err    error
}

// batchJob is one document of an IngestBatch on its way through the stages.
type batchJob struct {
	item   int
	p      IngestParams
	nd     store.NewDocument
	data   []byte
	added  *store.AddDocumentResult
	res    *IngestResult
	chunks []store.KnowledgeChunk
	err    error // the ingest's error once the job fails (before the write, or the write's)
	done   bool  // nothing to write: a duplicate, or failed before the write with out set
	busy   bool  // done, with no outcome yet: another ingest is indexing the same content
	out    BatchOutcome
}

// IngestBatch ingests items and returns their outcomes in item order; one item's failure does not
// stop the others. It is Ingest for each item, in stages over groups of BatchGroup documents: add
// the group's documents (one transaction), parse, split and embed them (on all cores), write their
// chunks (one transaction). Group k+1 is added and embedded while group k is written (on
// PostgreSQL while groups k and k-1 are, batchWriters), one group ahead of the writers at most.
// On SQLite, whose writers take turns, the transactions never overlap, and the documents of all
// groups are added first, in one transaction: a group's add waited behind the previous group's
// write (most of the host's CPU of an ingest), and the next group's parse and embed with it, so
// the two cores took turns instead of working together (the bench's HTTP case, batch/text of 50
// short documents a call); one transaction instead of one a group saves a few commits more. A transaction that fails is done again one document at a
// time, so each document gets its own outcome.
//
// An item that would land as the same document as an earlier one (same content into the same
// source) is ingested after the groups, as in a serial loop: a duplicate of the indexed document.
// So is an item whose content another ingest (another call) is indexing right now, once that one
// has ended (Ingest's wait, up to Options.SameContentWait for the whole batch): two identical
// batches sent at once write each document once, and the one that came second answers duplicates.
func (s *Service) IngestBatch(ctx context.Context, items []IngestParams) []BatchOutcome {
	type sameDoc struct {
		user, project, source string
		content               [sha256.Size]byte
	}
	out := make([]BatchOutcome, len(items))
	seen := map[sameDoc]bool{}
	var jobs []*batchJob
	var later []*batchJob // repeats of an earlier item, then (below) the busy jobs
	for i, p := range items {
		if err := p.Validate(); err != nil {
			out[i].Err = err
			continue
		}
		p.fillDefaults()
		key := sameDoc{p.UserID, p.ProjectID, p.SourceName, sha256.Sum256(p.content())}
		if seen[key] {
			later = append(later, &batchJob{item: i, p: p})
			continue
		}
		seen[key] = true
		j := &batchJob{item: i, p: p}
		j.nd, j.data = s.newDocument(p)
		jobs = append(jobs, j)
	}
	parallel := s.st.ParallelWrites()
	var turn sync.Mutex // SQLite: one of the two transactions at a time
	serial := func() func() {
		if parallel {
			return func() {}
		}
		turn.Lock()
		return turn.Unlock
	}
	ready := make(chan []*batchJob, 1)
	go func() {
		defer close(ready)
		if !parallel && len(jobs) > 0 { // SQLite: every add first, in one transaction (see above)
			s.addGroup(ctx, jobs, serial)
		}
		for start := 0; start < len(jobs); start += BatchGroup {
			g := jobs[start:min(len(jobs), start+BatchGroup)]
			if parallel {
				s.addGroup(ctx, g, serial)
			}
			s.prepareGroup(ctx, g)
			ready <- g
		}
	}()
	writers := 1
	if parallel {
		writers = batchWriters
	}
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for g := range ready {
				s.writeGroup(ctx, g, serial)
				for _, j := range g {
					out[j.item] = j.out // each item is in one group
				}
			}
		})
	}
	wg.Wait()
	for _, j := range jobs {
		if j.busy {
			later = append(later, j)
		}
	}
	slices.SortFunc(later, func(a, b *batchJob) int { return a.item - b.item })
	deadline := time.Now().Add(s.opt.SameContentWait)
	for _, j := range later {
		res, err := s.ingestWaiting(ctx, j.p, deadline)
		out[j.item] = BatchOutcome{Result: res, Err: err}
	}
	return out
}

// addGroup adds the documents of g (a group, or on SQLite every group of the batch) in one
// transaction (one at a time if it fails) and sets aside those with nothing to index.
func (s *Service) addGroup(ctx context.Context, g []*batchJob, serial func() func()) {
	docs := make([]store.NewDocument, len(g))
	for i, j := range g {
		docs[i] = j.nd
	}
	unlock := serial()
	all, err := s.st.AddDocuments(ctx, docs)
	unlock()
	for i, j := range g {
		if err == nil {
			j.added = all[i]
		} else {
			unlock := serial()
			j.added, j.err = s.st.AddDocument(ctx, j.nd.Source, j.nd.Document)
			unlock()
			if j.err != nil {
				j.done, j.out = true, BatchOutcome{Err: fmt.Errorf("kb: add document: %w", j.err)}
				continue
			}
		}
		if beingIndexed(j.added) != nil {
			j.done, j.busy = true, true // waited for after the groups (IngestBatch)
			continue
		}
		res, done := s.added(j.added)
		j.res = res
		if done {
			j.done, j.out = true, BatchOutcome{Result: res}
		}
	}
}

// prepareGroup parses, splits and embeds the group's documents, as many at once as there are
// cores.
func (s *Service) prepareGroup(ctx context.Context, g []*batchJob) {
	slots := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for _, j := range g {
		if j.done {
			continue
		}
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			j.chunks, j.err = s.prepare(ctx, j.added.Source, j.nd.Document, j.p, j.data)
		})
	}
	wg.Wait()
}

// writeGroup writes the chunks of the group's prepared documents in one transaction (one document
// at a time if it fails, so a document indexed meanwhile by another ingest is a duplicate and the
// others are written), then ends each document's ingest.
func (s *Service) writeGroup(ctx context.Context, g []*batchJob, serial func() func()) {
	var todo []*batchJob
	var docs []store.WriteChunksParams
	for _, j := range g {
		if !j.done && j.err == nil {
			todo = append(todo, j)
			docs = append(docs, store.WriteChunksParams{DocumentID: j.nd.Document.ID, Chunks: j.chunks})
		}
	}
	// written: the documents as their write left them, which their ingests answer with (no read
	// again).
	written := map[string]*store.KnowledgeDocument{}
	keep := func(docs []*store.KnowledgeDocument) {
		for _, d := range docs {
			written[d.ID] = d
		}
	}
	if len(docs) > 0 {
		unlock := serial()
		got, err := s.write(ctx, docs...)
		unlock()
		keep(got)
		if err != nil && len(docs) == 1 {
			todo[0].err = err
		} else if err != nil {
			for i, j := range todo {
				unlock := serial()
				got, j.err = s.write(ctx, docs[i])
				unlock()
				keep(got)
			}
		}
	}
	for _, j := range g {
		if j.done {
			continue
		}
		n := len(j.chunks)
		if j.err != nil {
			n = 0
		}
		res, err := s.finishIngest(ctx, j.res, j.nd.Document.ID, n, written[j.nd.Document.ID], j.err)
		j.out = BatchOutcome{Result: res, Err: err}
	}
}
