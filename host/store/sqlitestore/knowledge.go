package sqlitestore

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/sqldb"
)

// WriteChunks implements store.Knowledge through writeChunks.
func (d *Driver) WriteChunks(ctx context.Context, p store.WriteChunksParams) (*store.KnowledgeDocument, error) {
	docs, err := d.writeChunks(ctx, []store.WriteChunksParams{p})
	if err != nil {
		return nil, err
	}
	return docs[0], nil
}

// WriteChunksBatch implements store.Knowledge through writeChunks.
func (d *Driver) WriteChunksBatch(ctx context.Context, docs []store.WriteChunksParams) ([]*store.KnowledgeDocument, error) {
	return d.writeChunks(ctx, docs)
}

// writeChunks writes the documents' chunks (sqldb) and drops the cached term counts they change.
func (d *Driver) writeChunks(ctx context.Context, docs []store.WriteChunksParams) ([]*store.KnowledgeDocument, error) {
	out, err := d.DB.WriteChunkRows(ctx, docs)
	d.df.Reset()
	return out, err
}

// newTermCounts is the document-frequency cache of the keyword leg. Writes of this process reset
// it; those of another process (the CLI's ingest) are seen within TTL. A stale count only shifts
// which common terms the keyword leg leaves out.
func newTermCounts() *sqldb.TermCounts[int] {
	return &sqldb.TermCounts[int]{TTL: 10 * time.Second, Max: 20000}
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

// keywordRows is about how many matching rows one keyword search ranks with bm25 before it
// leaves out its most common terms. Ranking costs a few microseconds a row (FTS5 reads the row's
// size and positions), and an OR of common words matches most of a large corpus.
const keywordRows = 2000

// KeywordCandidates implements store.Knowledge: FTS5 MATCH with an OR of the terms, by bm25.
// The best matches of the whole index are taken first (FTS5 ranks them without touching the
// chunk rows), then filtered by visibility; when that leaves fewer than the limit, more of the
// best, and at last the visible matches ranked in full.
//
// When the terms together match more than keywordRows rows, only the rarest ones are searched:
// terms are taken by ascending document frequency while their rows add up to keywordRows (the
// rarest always). A term left out is common, so its bm25 weight (idf) is small, and FTS5 gives a
// term held by half the rows or more no weight at all; the in-memory ranking still scores every
// query term on the candidates, and the vector leg brings its own.
func (d *Driver) KeywordCandidates(ctx context.Context, p store.SearchParams) ([]store.ChunkRow, error) {
	terms, rows, err := d.searchTerms(ctx, p.Terms)
	if err != nil {
		return nil, err
	}
	q := ftsQuery(terms)
	if q == "" {
		return nil, nil
	}
	// Joining a match to its chunk, source and document (for the visibility rule) costs more
	// than ranking it, so the best 2*limit matches are joined first; when fewer than limit of
	// those are visible, the best 1000, then all. Each stage returns exactly the best visible
	// matches when it returns limit of them. When the terms match no more rows than a stage
	// takes, all of them are ranked at once instead (a stage would rank the same rows again).
	for _, inner := range []int{2 * p.Limit, max(1000, 10*p.Limit)} {
		if rows <= inner {
			break
		}
		out, err := d.keywordQuery(ctx, p, q, inner)
		if err != nil || len(out) >= p.Limit {
			return out, err
		}
	}
	return d.keywordQuery(ctx, p, q, 0)
}

// searchTerms leaves out, past keywordRows matching rows, the most common terms; it keeps the
// query's order. A term the vocabulary does not list is kept: it matches nothing, or the
// tokenizer reads it as another term whose frequency is unknown here. rows is the sum of the
// kept terms' frequencies, the most rows they can match but for such terms (counted as 0: an
// estimate too low only makes KeywordCandidates rank every match at once, never miss one).
func (d *Driver) searchTerms(ctx context.Context, terms []string) (kept []string, rows int, err error) {
	if len(terms) > 64 {
		terms = terms[:64] // ftsQuery's limit
	}
	if len(terms) == 0 {
		return nil, 0, nil
	}
	st, err := d.TermStats(ctx, terms)
	if err != nil {
		return nil, 0, err
	}
	df := st.DF
	total := 0
	var known []string
	for _, t := range terms {
		if df[t] > 0 {
			total += df[t]
			known = append(known, t)
		}
	}
	if total <= keywordRows {
		return terms, total, nil
	}
	sort.SliceStable(known, func(i, j int) bool { return df[known[i]] < df[known[j]] })
	n, sum := 1, df[known[0]]
	for n < len(known) && sum+df[known[n]] <= keywordRows {
		sum += df[known[n]]
		n++
	}
	drop := make(map[string]bool, len(known)-n)
	for _, t := range known[n:] {
		drop[t] = true
	}
	out := make([]string, 0, len(terms)-len(drop))
	for _, t := range terms {
		if !drop[t] {
			out = append(out, t)
		}
	}
	return out, sum, nil
}

// TermStats implements store.Knowledge: the chunk count, their mean token_count and the FTS5
// vocabulary's document frequencies, cached (sqldb.TermCounts).
func (d *Driver) TermStats(ctx context.Context, terms []string) (store.TermStats, error) {
	n, df, missing := d.df.Lookup(terms)
	if len(missing) > 0 || n.N == 0 {
		counted := make(map[string]int, len(missing))
		for _, t := range missing {
			counted[t] = 0 // a term the vocabulary does not list
		}
		if len(missing) > 0 {
			if err := d.countTerms(ctx, missing, counted); err != nil {
				return store.TermStats{}, err
			}
		}
		if n.N == 0 { // the cache is new (empty, expired or reset by a write): count the chunks too
			if err := d.QueryRow(ctx, `SELECT COUNT(*), COALESCE(AVG(token_count), 0) FROM knowledge_chunks`).Scan(&n.N, &n.AvgLen); err != nil {
				return store.TermStats{}, err
			}
		}
		d.df.Store(n, counted)
		for t, c := range counted {
			df[t] = c
		}
	}
	return store.TermStats{Docs: n.N, AvgLen: n.AvgLen, DF: df}, nil
}

// countTerms adds the document frequencies of terms to df from the FTS5 vocabulary.
func (d *Driver) countTerms(ctx context.Context, terms []string, df map[string]int) error {
	var a sqldb.Args
	rows, err := d.Query(ctx, `SELECT term, doc FROM knowledge_chunks_fts_vocab WHERE `+a.In("term", terms), a.List...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var t string
		var n int
		if err := rows.Scan(&t, &n); err != nil {
			return err
		}
		df[t] = n
	}
	return rows.Err()
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
	sel := `SELECT ` + sqldb.ChunkCols + `, -f.r AS k FROM ` + from + `
		JOIN knowledge_chunks c ON c.rowid = f.rowid
		JOIN knowledge_sources s ON s.id = c.source_id JOIN knowledge_documents d ON d.id = c.document_id
		WHERE ` + vis + ` ORDER BY f.r LIMIT ` + a.Add(p.Limit)
	return sqldb.ScoredChunks(ctx, d.DB, sel, a.List, func(c *store.ChunkRow, k float64) { c.Keyword = k })
}

// VectorCandidates implements store.Knowledge: SQLite has no vector index; the host scans the
// vectors itself.
func (d *Driver) VectorCandidates(context.Context, store.SearchParams) ([]store.ChunkRow, error) {
	return nil, store.ErrNotSupported
}

// DeleteDocument implements store.Knowledge; the keyword statistics' cache starts over.
func (d *Driver) DeleteDocument(ctx context.Context, id string) ([]string, error) {
	defer d.df.Reset()
	return d.DB.DeleteDocument(ctx, id)
}
