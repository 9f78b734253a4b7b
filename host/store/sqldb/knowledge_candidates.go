package sqldb

import (
	"context"
	"encoding/json"

	"github.com/reelforge/reelforge/host/store"
)

// ChunkCols are the columns ScanChunk reads, over chunks c, sources s and documents d.
const ChunkCols = `c.id, c.document_id, d.title, c.source_id, s.name, c.chunk_index, c.chunk_text, c.heading, c.search_text, c.metadata, c.embedding_model`

// ChunkFrom joins a chunk to its source and document.
const ChunkFrom = ` FROM knowledge_chunks c JOIN knowledge_sources s ON s.id = c.source_id JOIN knowledge_documents d ON d.id = c.document_id `

// ScoredChunks runs q, whose rows are ChunkCols and then a score, and reads them; set puts the
// score where it belongs (ChunkRow.Keyword, ChunkRow.Vector).
func ScoredChunks(ctx context.Context, db *DB, q string, args []any, set func(c *store.ChunkRow, score float64)) ([]store.ChunkRow, error) {
	var out []store.ChunkRow
	err := QueryEach(ctx, db, q, args, func(r Row) error {
		var score float64
		c, err := ScanChunk(r, &score)
		if err != nil {
			return err
		}
		set(&c, score)
		out = append(out, c)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ScanChunk reads ChunkCols, then extra destinations.
func ScanChunk(r Row, extra ...any) (store.ChunkRow, error) {
	var c store.ChunkRow
	var meta json.RawMessage
	dest := append([]any{&c.ID, &c.DocumentID, &c.DocumentTitle, &c.SourceID, &c.SourceName, &c.Index, &c.Text, &c.Heading,
		&c.SearchText, JSON(&meta), &c.EmbeddingModel}, extra...)
	if err := r.Scan(dest...); err != nil {
		return c, err
	}
	c.Metadata = meta
	return c, nil
}

// EmbeddingRefs implements store.Knowledge.
func (db *DB) EmbeddingRefs(ctx context.Context, v store.Viewer) ([]store.EmbeddingRef, error) {
	var a Args
	rows, err := db.Query(ctx, `SELECT c.id, c.embedding_model FROM knowledge_chunks c JOIN knowledge_sources s ON s.id = c.source_id
		WHERE c.embedding_model <> '' AND `+Visible(v, &a, "c.document_id"), a.List...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.EmbeddingRef
	for rows.Next() {
		var r store.EmbeddingRef
		if err := rows.Scan(&r.ChunkID, &r.Model); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Embeddings implements store.Knowledge.
func (db *DB) Embeddings(ctx context.Context, refs []store.EmbeddingRef) (map[string][]float32, error) {
	return db.EmbeddingsWith(ctx, refs, "")
}

// EmbeddingsWith is Embeddings for a driver that keeps some vectors in a column of its own
// instead of the float32 bytes: half is an SQL expression reading that column as an array of
// float32, used where the bytes are NULL ("" when there is no such column).
func (db *DB) EmbeddingsWith(ctx context.Context, refs []store.EmbeddingRef, half string) (map[string][]float32, error) {
	cols := "chunk_id, embedding"
	if half != "" {
		cols += ", " + half
	}
	out := make(map[string][]float32, len(refs))
	byModel := map[string][]string{}
	for _, r := range refs {
		byModel[r.Model] = append(byModel[r.Model], r.ChunkID)
	}
	for model, ids := range byModel {
		err := inBatches(ids, func(batch []string) error {
			var a Args
			q := `SELECT ` + cols + ` FROM knowledge_embeddings WHERE model = ` + a.Add(model) + ` AND ` + a.In("chunk_id", batch)
			return QueryEach(ctx, db, q, a.List, func(r Row) error {
				var id string
				var b []byte
				var h []float32
				dest := []any{&id, &b}
				if half != "" {
					dest = append(dest, &h)
				}
				if err := r.Scan(dest...); err != nil {
					return err
				}
				if b == nil && h != nil {
					out[id] = h
				} else {
					out[id] = DecodeVector(b)
				}
				return nil
			})
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ChunksByID implements store.Knowledge.
func (db *DB) ChunksByID(ctx context.Context, ids []string) ([]store.ChunkRow, error) {
	var out []store.ChunkRow
	err := inBatches(ids, func(batch []string) error {
		var a Args
		q := `SELECT ` + ChunkCols + ChunkFrom + ` WHERE ` + a.In("c.id", batch)
		return QueryEach(ctx, db, q, a.List, func(r Row) error {
			c, err := ScanChunk(r)
			if err != nil {
				return err
			}
			out = append(out, c)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// inBatch is how many values (ids, or hash pairs) one query of inBatches holds at most.
const inBatch = 500

// inBatches calls f with items in order, inBatch at a time, and stops at the first error.
func inBatches[T any](items []T, f func(batch []T) error) error {
	for len(items) > 0 {
		n := min(len(items), inBatch)
		if err := f(items[:n]); err != nil {
			return err
		}
		items = items[n:]
	}
	return nil
}

// SourceChunks implements store.Knowledge.
func (db *DB) SourceChunks(ctx context.Context, p store.SourceChunksParams) ([]store.ChunkRow, error) {
	rows, err := db.Query(ctx, `SELECT `+ChunkCols+ChunkFrom+` WHERE c.source_id = $1 AND c.id > $2 ORDER BY c.id LIMIT $3`,
		p.SourceID, p.AfterID, p.Limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.ChunkRow
	for rows.Next() {
		c, err := ScanChunk(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}
