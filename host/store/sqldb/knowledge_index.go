package sqldb

import (
	"context"
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/reelforge/reelforge/host/store"
)

// EmbeddingRow is one vector to write.
type EmbeddingRow struct {
	ChunkID string
	Model   string
	Vector  []float32
}

// EmbeddingWriter inserts embedding rows; drivers with a vector column fill it too.
type EmbeddingWriter func(ctx context.Context, tx *DB, rows []EmbeddingRow, now time.Time) error

// insertBatch is the most rows of one multi-row INSERT.
const insertBatch = 50

// InsertRows runs head ("INSERT INTO table (cols)") with multi-row VALUES over n rows in batches;
// row adds the values of row i to a and returns its "(...)" tuple.
func (db *DB) InsertRows(ctx context.Context, head string, n int, row func(i int, a *Args) string) error {
	return db.insertRowsBatch(ctx, head, n, insertBatch, row)
}

// insertRowsBatch is InsertRows with at most batch rows a statement.
func (db *DB) insertRowsBatch(ctx context.Context, head string, n, batch int, row func(i int, a *Args) string) error {
	for start := 0; start < n; start += batch {
		var a Args
		vals := make([]string, 0, batch)
		for i := start; i < min(n, start+batch); i++ {
			vals = append(vals, row(i, &a))
		}
		if _, err := db.Exec(ctx, head+" VALUES "+strings.Join(vals, ", "), a.List...); err != nil {
			return err
		}
	}
	return nil
}

// InsertEmbeddings is the EmbeddingWriter of drivers without a vector column.
func InsertEmbeddings(ctx context.Context, tx *DB, rows []EmbeddingRow, now time.Time) error {
	ts := tx.T(now)
	return tx.InsertRows(ctx, `INSERT INTO knowledge_embeddings (chunk_id, model, embedding, created_at)`, len(rows),
		func(i int, a *Args) string {
			r := rows[i]
			return "(" + a.Add(r.ChunkID) + ", " + a.Add(r.Model) + ", " + a.Add(EncodeVector(r.Vector)) + ", " + a.Add(ts) + ")"
		})
}

// WriteChunkRows writes the chunks of each of docs and their embeddings (float32 bytes) with
// multi-row INSERTs and marks each document indexed, all in one transaction: the write of a
// driver whose database has no faster path for it (SQLite, in-process; pgstore has its own). It
// returns the documents as it left them, in the order of docs.
//
// The chunks of all docs go in first, in as few statements as chunkInsertBatch allows, then all
// embeddings, then the marks. SQLite's keyword index (FTS5, filled by a trigger on the chunks)
// keeps the terms of the transaction in memory and writes them out as a new segment of its index
// whenever a statement opens a savepoint (every multi-row INSERT does), so a statement of chunks
// a document, each followed by that document's embeddings, wrote a segment a document, and the
// automerge rewrote them again: a fifth of the host's CPU in the bench's HTTP case (batch/text,
// 50 short documents a call, issue 24; one segment a group of kb.BatchGroup: host CPU MB/s
// 1.68 to 2.10 in four interleaved pairs, BENCHMARKS.md).
func (db *DB) WriteChunkRows(ctx context.Context, docs []store.WriteChunksParams) ([]*store.KnowledgeDocument, error) {
	type row struct {
		c   *store.KnowledgeChunk
		doc string
	}
	var rows []row
	var vecs []EmbeddingRow
	for _, p := range docs {
		for i := range p.Chunks {
			c := &p.Chunks[i]
			rows = append(rows, row{c, p.DocumentID})
			if c.Embedding != nil {
				vecs = append(vecs, EmbeddingRow{ChunkID: c.ID, Model: c.EmbeddingModel, Vector: c.Embedding})
			}
		}
	}
	out := make([]*store.KnowledgeDocument, len(docs))
	err := db.WithTx(ctx, func(tx *DB) error {
		now := tx.Now()
		ts := tx.T(now)
		if err := tx.insertRowsBatch(ctx, `INSERT INTO knowledge_chunks (id, source_id, document_id, chunk_index, chunk_text, heading,
			token_count, search_text, metadata, embedding_model, created_at)`, len(rows), chunkInsertBatch, func(i int, a *Args) string {
			c := rows[i].c
			return "(" + strings.Join([]string{a.Add(c.ID), a.Add(c.SourceID), a.Add(rows[i].doc), a.Add(c.Index), a.Add(c.Text),
				a.Add(c.Heading), a.Add(c.TokenCount), a.Add(c.SearchText), a.Add(JOr(c.Metadata, "{}")), a.Add(c.EmbeddingModel),
				a.Add(ts)}, ", ") + ")"
		}); err != nil {
			return err
		}
		if err := InsertEmbeddings(ctx, tx, vecs, now); err != nil {
			return err
		}
		return tx.markIndexedAll(ctx, docs, now, out)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// markIndexedAll is MarkIndexed of each of docs, into out, with one UPDATE for them all (a
// statement a document was about a twentieth of the host's CPU in the bench's HTTP case). A
// document it did not update is indexed already or missing: the same error as MarkIndexed's. A
// document named twice takes MarkIndexed one at a time, whose second call is the conflict.
func (db *DB) markIndexedAll(ctx context.Context, docs []store.WriteChunksParams, at time.Time, out []*store.KnowledgeDocument) error {
	seen := make(map[string]bool, len(docs))
	for _, p := range docs {
		seen[p.DocumentID] = true
	}
	if len(docs) == 1 || len(seen) < len(docs) {
		for k, p := range docs {
			doc, err := db.MarkIndexed(ctx, p.DocumentID, len(p.Chunks), at)
			if err != nil {
				return err
			}
			out[k] = doc
		}
		return nil
	}
	var a Args
	status, ts := a.Add(store.DocIndexed), a.Add(db.T(at))
	vals := make([]string, len(docs))
	for k, p := range docs {
		vals[k] = "(" + a.Add(p.DocumentID) + ", " + a.Add(len(p.Chunks)) + ")"
	}
	byID := make(map[string]*store.KnowledgeDocument, len(docs))
	err := QueryEach(ctx, db, `UPDATE knowledge_documents SET parse_status = `+status+`, error_message = '', chunk_count = v.column2,
		updated_at = `+ts+` FROM (VALUES `+strings.Join(vals, ", ")+`) AS v
		WHERE knowledge_documents.id = v.column1 AND knowledge_documents.parse_status <> `+status+` RETURNING `+markedCols, a.List,
		func(r Row) error {
			doc, err := ScanDocument(r)
			if err == nil {
				byID[doc.ID] = doc
			}
			return err
		})
	if err != nil {
		return err
	}
	for k, p := range docs {
		if out[k] = byID[p.DocumentID]; out[k] == nil {
			return db.IndexedOrMissing(ctx, p.DocumentID)
		}
	}
	return nil
}

// chunkInsertBatch is the most chunk rows of one INSERT of WriteChunkRows (11 parameters a row):
// a group of kb.BatchGroup short documents is one statement.
const chunkInsertBatch = 200

// MarkIndexed ends a document's ingest, in the transaction that wrote its chunks, and returns the
// document as it leaves it. A document is indexed once: a second ingest of it (a retried upload
// racing a slow first one) gets ErrConflict, so its transaction rolls back instead of adding a
// second set of chunks.
func (db *DB) MarkIndexed(ctx context.Context, docID string, chunks int, at time.Time) (*store.KnowledgeDocument, error) {
	doc, err := ScanDocument(db.QueryRow(ctx, `UPDATE knowledge_documents SET parse_status = $2, error_message = '', chunk_count = $3,
		updated_at = $4 WHERE id = $1 AND parse_status <> $2 RETURNING `+markedCols, docID, store.DocIndexed, chunks, db.T(at)))
	if errors.Is(err, store.ErrNotFound) {
		return nil, db.IndexedOrMissing(ctx, docID)
	}
	return doc, err
}

// markedCols are DocCols unqualified, for a RETURNING clause (SQLite's names the table's
// columns only).
var markedCols = strings.ReplaceAll(DocCols, "d.", "")

// AddEmbeddingsWith writes vectors of model through put, replacing earlier rows of that model.
func (db *DB) AddEmbeddingsWith(ctx context.Context, model string, vecs map[string][]float32, put EmbeddingWriter) error {
	ids := make([]string, 0, len(vecs))
	for id := range vecs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return db.WithTx(ctx, func(tx *DB) error {
		err := inBatches(ids, func(batch []string) error {
			var a Args
			q := `DELETE FROM knowledge_embeddings WHERE model = ` + a.Add(model) + ` AND ` + a.In("chunk_id", batch)
			_, err := tx.Exec(ctx, q, a.List...)
			return err
		})
		if err != nil {
			return err
		}
		rows := make([]EmbeddingRow, 0, len(ids))
		for _, id := range ids {
			rows = append(rows, EmbeddingRow{ChunkID: id, Model: model, Vector: vecs[id]})
		}
		return put(ctx, tx, rows, tx.Now())
	})
}

// SwitchEmbeddings implements store.Knowledge.
func (db *DB) SwitchEmbeddings(ctx context.Context, sourceID, model string) error {
	return db.WithTx(ctx, func(tx *DB) error {
		if _, err := tx.Exec(ctx, `UPDATE knowledge_chunks SET embedding_model = $2 WHERE source_id = $1`, sourceID, model); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM knowledge_embeddings WHERE model <> $2 AND chunk_id IN (
			SELECT id FROM knowledge_chunks WHERE source_id = $1)`, sourceID, model)
		return err
	})
}
