package pgstore

import (
	"context"

	"github.com/reelforge/reelforge/host/store"
)

// PostgreSQL's own knowledge paths by concern: documents added and deleted here;
// knowledge_index.go writes chunks and their vectors; knowledge_candidates.go is the keyword
// (tsvector) and vector (HNSW) legs of a search; knowledge_stats.go the term statistics that
// weigh the keyword leg. What both databases share is in sqldb's knowledge*.go.

// vectorDims is the dimension of the embedding_vector column (halfvec: half-precision floats).
const vectorDims = 1536

// inHalfColumn reports where the pgvector path stores v: a vector of the halfvec column's
// dimension only there (half precision, what the search ranks with and what Embeddings reads
// back), one of another dimension only in the float32 bytes. The bytes of a 1536-dimension vector,
// written beside it until migration 0710, were 3.7 to 6 KB more a chunk for the server to write
// and log, read only by the in-memory path.
func inHalfColumn(v []float32) bool { return len(v) == vectorDims }

// AddDocument implements store.Knowledge: AddDocuments of one document.
func (d *Driver) AddDocument(ctx context.Context, src store.NewSourceParams, doc *store.KnowledgeDocument) (*store.AddDocumentResult, error) {
	out, err := d.AddDocuments(ctx, []store.NewDocument{{Source: src, Document: doc}})
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// AddDocuments implements store.Knowledge: sqldb's, in a transaction whose commit does not wait
// for the WAL flush (beginLazy), which saves an ingest one of its two flushes (an fdatasync: 1.6 to
// 1.9 ms on this machine's disk, pg_test_fsync; the target is one document a call, BENCHMARKS.md).
// What an ingest answers on is the commit of its chunks (or of its failed status), which waits
// for the flush, and the WAL is flushed in order, so that commit makes this one durable too. A
// server crash before it loses at most the new document rows of ingests that have not answered:
// the documents are then absent instead of parsing, and a retry adds them again. Rule: a caller
// that answers from this commit alone must commit something synchronously first; the one such
// write is a duplicate upload's mark of its source as internal (markInternal), which a crash within
// wal_writer_delay (200 ms) of it can lose.
//
// One new document into a source that exists, the case of an ingest of one document a call, takes
// one round trip (addNew); the other cases take sqldb's path.
func (d *Driver) AddDocuments(ctx context.Context, docs []store.NewDocument) ([]*store.AddDocumentResult, error) {
	if d.lazy == nil || d.DB.InTransaction() {
		return d.DB.AddDocuments(ctx, docs)
	}
	if len(docs) == 1 && d.batch != nil {
		res, ok, err := d.addNew(ctx, docs[0])
		if err != nil {
			return nil, err
		}
		if ok {
			return []*store.AddDocumentResult{res}, nil
		}
	}
	return d.lazy.AddDocuments(ctx, docs)
}

// DeleteDocument implements store.Knowledge; the keyword statistics' cache starts over, and the
// indexer counts the chunks deleted towards the next ANALYZE (analyzeIfStale).
func (d *Driver) DeleteDocument(ctx context.Context, id string) ([]string, error) {
	defer d.df.Reset()
	ids, err := d.DB.DeleteDocument(ctx, id)
	if err == nil {
		d.idx.changes(len(ids))
	}
	return ids, err
}
