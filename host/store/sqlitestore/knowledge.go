package sqlitestore

import (
	"context"
	"strings"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/sqldb"
)

// WriteChunks implements store.Knowledge.
func (d *Driver) WriteChunks(ctx context.Context, p store.WriteChunksParams) error {
	return d.DB.WriteChunksWith(ctx, p, sqldb.InsertEmbeddings)
}

// AddEmbeddings implements store.Knowledge.
func (d *Driver) AddEmbeddings(ctx context.Context, model string, vecs map[string][]float32) error {
	return d.DB.AddEmbeddingsWith(ctx, model, vecs, sqldb.InsertEmbeddings)
}

// ftsQuery is an FTS5 OR query of the terms, each quoted; terms carry only letters and digits.
func ftsQuery(terms []string) string {
	parts := make([]string, 0, len(terms))
	for _, t := range terms {
		t = strings.ReplaceAll(t, `"`, ``)
		if t != "" {
			parts = append(parts, `"`+t+`"`)
		}
		if len(parts) == 64 {
			break
		}
	}
	return strings.Join(parts, " OR ")
}

// KeywordCandidates implements store.Knowledge: FTS5 MATCH with an OR of the terms, by bm25.
// The best matches of the whole index are taken first (FTS5 ranks them without touching the
// chunk rows), then filtered by visibility; when that leaves fewer than the limit, the visible
// matches are ranked in full.
func (d *Driver) KeywordCandidates(ctx context.Context, p store.SearchParams) ([]store.ChunkRow, error) {
	q := ftsQuery(p.Terms)
	if q == "" {
		return nil, nil
	}
	out, err := d.keywordQuery(ctx, p, q, max(1000, 10*p.Limit))
	if err != nil || len(out) >= p.Limit {
		return out, err
	}
	return d.keywordQuery(ctx, p, q, 0)
}

// keywordQuery ranks the matches of q; inner > 0 first takes the inner best of the whole index.
func (d *Driver) keywordQuery(ctx context.Context, p store.SearchParams, q string, inner int) ([]store.ChunkRow, error) {
	var a sqldb.Args
	m := a.Add(q)
	from := `(SELECT rowid, bm25(knowledge_chunks_fts) AS r FROM knowledge_chunks_fts WHERE knowledge_chunks_fts MATCH ` + m
	if inner > 0 {
		from += ` ORDER BY r LIMIT ` + a.Add(inner)
	}
	from += `) f`
	vis := sqldb.Visible(p.Viewer, &a, "c.document_id")
	rows, err := d.Query(ctx, `SELECT `+sqldb.ChunkCols+`, -f.r AS k FROM `+from+`
		JOIN knowledge_chunks c ON c.rowid = f.rowid
		JOIN knowledge_sources s ON s.id = c.source_id JOIN knowledge_documents d ON d.id = c.document_id
		WHERE `+vis+` ORDER BY f.r LIMIT `+a.Add(p.Limit), a.List...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.ChunkRow
	for rows.Next() {
		var k float64
		c, err := sqldb.ScanChunk(rows, &k)
		if err != nil {
			return nil, err
		}
		c.Keyword = k
		out = append(out, c)
	}
	return out, rows.Err()
}

// VectorSearch implements store.Knowledge: SQLite scores vectors in memory.
func (d *Driver) VectorSearch(context.Context, store.SearchParams) ([]store.ChunkRow, error) {
	return nil, store.ErrNotSupported
}
