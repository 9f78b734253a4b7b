package pgstore

import (
	"context"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/pgvector/pgvector-go"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/sqldb"
)

// vectorDims is the dimension of the embedding_vector column.
const vectorDims = 1536

// WriteChunks implements store.Knowledge, filling the vector column when pgvector is active.
func (d *Driver) WriteChunks(ctx context.Context, p store.WriteChunksParams) error {
	return d.DB.WriteChunksWith(ctx, p, d.putEmbedding)
}

// AddEmbeddings implements store.Knowledge.
func (d *Driver) AddEmbeddings(ctx context.Context, model string, vecs map[string][]float32) error {
	return d.DB.AddEmbeddingsWith(ctx, model, vecs, d.putEmbedding)
}

func (d *Driver) putEmbedding(ctx context.Context, tx *sqldb.DB, rows []sqldb.EmbeddingRow, now time.Time) error {
	if !d.vector {
		return sqldb.InsertEmbeddings(ctx, tx, rows, now)
	}
	ts := tx.T(now)
	return tx.InsertRows(ctx, `INSERT INTO knowledge_embeddings (chunk_id, model, embedding, embedding_vector, created_at)`, len(rows),
		func(i int, a *sqldb.Args) string {
			r := rows[i]
			var vec any // NULL for a vector of another dimension
			if len(r.Vector) == vectorDims {
				vec = pgvector.NewVector(r.Vector)
			}
			return "(" + a.Add(r.ChunkID) + ", " + a.Add(r.Model) + ", " + a.Add(sqldb.EncodeVector(r.Vector)) + ", " +
				a.Add(vec) + "::vector, " + a.Add(ts) + ")"
		})
}

// tsQuery is an OR of the terms for to_tsquery('simple', ...); terms carry only letters and digits.
func tsQuery(terms []string) string {
	parts := make([]string, 0, len(terms))
	for _, t := range terms {
		t = strings.NewReplacer(`'`, ``, `\`, ``).Replace(t)
		if t != "" {
			parts = append(parts, "'"+t+"'")
		}
		if len(parts) == 64 {
			break
		}
	}
	return strings.Join(parts, " | ")
}

// keywordScan caps the rows ts_rank scores on a large corpus (about 4 µs a row).
const keywordScan = 20000

// KeywordCandidates implements store.Knowledge: ts_rank over search_tsv with an OR query of the
// terms that are not in most chunks (see termWeights).
func (d *Driver) KeywordCandidates(ctx context.Context, p store.SearchParams) ([]store.ChunkRow, error) {
	q, _, _, err := termWeights(ctx, d.DB, p.Terms)
	if err != nil || q == "" {
		return nil, err
	}
	var a sqldb.Args
	tq := a.Add(q)
	vis := sqldb.Visible(p.Viewer, &a, "c.document_id")
	rows, err := d.Query(ctx, `WITH m AS (
			SELECT c.id FROM knowledge_chunks c JOIN knowledge_sources s ON s.id = c.source_id
			WHERE c.search_tsv @@ to_tsquery('simple', `+tq+`) AND `+vis+` LIMIT `+strconv.Itoa(keywordScan)+`)
		SELECT `+sqldb.ChunkCols+`, ts_rank(c.search_tsv, to_tsquery('simple', `+tq+`)) AS k`+sqldb.ChunkFrom+`
		WHERE c.id IN (SELECT id FROM m) ORDER BY k DESC, c.id LIMIT `+a.Add(p.Limit), a.List...)
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

// VectorSearch implements store.Knowledge: SPEC.md rule 4 as one SQL expression,
// total = 0.65 * (1 - cosine distance) + 0.35 * ts_rank, over the union of the keyword leg's and
// the HNSW index's candidates, both under the visibility filter.
func (d *Driver) VectorSearch(ctx context.Context, p store.SearchParams) ([]store.ChunkRow, error) {
	if !d.vector || len(p.Vector) != vectorDims {
		return nil, store.ErrNotSupported
	}
	capN := p.Cap
	if capN <= 0 {
		capN = 200
	}
	var out []store.ChunkRow
	err := d.DB.WithTx(ctx, func(tx *sqldb.DB) error {
		// Iterative index scans keep returning neighbours until the visibility filter is satisfied.
		if _, err := tx.Exec(ctx, `SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true),
			set_config('hnsw.ef_search', $1, true)`, strconv.Itoa(max(40, capN))); err != nil {
			return err
		}
		match, quoted, weights, err := termWeights(ctx, tx, p.Terms)
		if err != nil {
			return err
		}
		var a sqldb.Args
		v := a.Add(pgvector.NewVector(p.Vector))
		tq := a.Add(match)
		ts, ws := a.Add(quoted), a.Add(weights)
		model := a.Add(p.Model)
		vis := sqldb.Visible(p.Viewer, &a, "c.document_id")
		cp := a.Add(capN)
		// The keyword score is a text rank of the simple configuration: ts_rank per query term,
		// weighted by the term's idf (ts_rank alone ignores how common a term is), relative to the
		// best candidate's (0..1, like the vector score) so neither leg drowns the other. The
		// keyword leg matches the terms that are not in most chunks.
		kr := `(SELECT COALESCE(SUM(w.w * ts_rank(c.search_tsv, w.tq)), 0) FROM w WHERE c.search_tsv @@ w.tq)`
		rows, err := tx.Query(ctx, `WITH q AS (SELECT `+v+`::vector AS v, to_tsquery('simple', `+tq+`) AS tq),
			w AS MATERIALIZED (SELECT to_tsquery('simple', t) AS tq, wt AS w FROM unnest(`+ts+`::text[], `+ws+`::float8[]) AS x(t, wt)),
			m AS (SELECT c.id FROM knowledge_chunks c JOIN knowledge_sources s ON s.id = c.source_id, q
				WHERE c.search_tsv @@ q.tq AND `+vis+` LIMIT `+strconv.Itoa(keywordScan)+`),
			kw AS (SELECT c.id FROM knowledge_chunks c, q WHERE c.id IN (SELECT id FROM m)
				ORDER BY ts_rank(c.search_tsv, q.tq) DESC LIMIT `+cp+`),
			vn AS (SELECT e.chunk_id AS id FROM knowledge_embeddings e, q
				WHERE e.model = `+model+` AND e.embedding_vector IS NOT NULL AND EXISTS (
					SELECT 1 FROM knowledge_chunks c JOIN knowledge_sources s ON s.id = c.source_id
					WHERE c.id = e.chunk_id AND c.embedding_model = e.model AND `+vis+`)
				ORDER BY e.embedding_vector <=> q.v LIMIT `+cp+`),
			scored AS MATERIALIZED (SELECT c.id, COALESCE(1 - (e.embedding_vector <=> q.v), 0) AS vs, `+kr+` AS kr
				FROM knowledge_chunks c LEFT JOIN knowledge_embeddings e ON e.chunk_id = c.id AND e.model = c.embedding_model, q
				WHERE c.id IN (SELECT id FROM kw UNION SELECT id FROM vn)),
			n AS (SELECT id, vs, CASE WHEN MAX(kr) OVER () > 0 THEN kr / MAX(kr) OVER () ELSE 0 END AS ks FROM scored)
			SELECT `+sqldb.ChunkCols+`, n.vs, n.ks, 0.65 * n.vs + 0.35 * n.ks AS total
			FROM n JOIN knowledge_chunks c ON c.id = n.id
			JOIN knowledge_sources s ON s.id = c.source_id JOIN knowledge_documents d ON d.id = c.document_id
			WHERE NOT (n.ks = 0 AND n.vs < `+a.Add(p.Floor)+`)
			ORDER BY total DESC, c.id LIMIT `+a.Add(p.Limit), a.List...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var c store.ChunkRow
			var vs, ks, total float64
			if c, err = sqldb.ScanChunk(rows, &vs, &ks, &total); err != nil {
				return err
			}
			c.Vector, c.Keyword, c.Total = vs, ks, total
			out = append(out, c)
		}
		return rows.Err()
	})
	return out, err
}

// termWeights returns the query terms that count: those held by at most half the chunks (or the
// rarest one when all are that common; the others weigh almost nothing in BM25's idf), as the OR
// query the keyword leg matches, each quoted for to_tsquery, and their idf,
// ln(1 + (n - df + 0.5) / (df + 0.5)).
func termWeights(ctx context.Context, tx *sqldb.DB, terms []string) (match string, quoted []string, weights []float64, err error) {
	if len(terms) > 64 {
		terms = terms[:64]
	}
	var qs []string
	for _, t := range terms {
		if q := tsQuery([]string{t}); q != "" {
			qs = append(qs, q)
		}
	}
	if len(qs) == 0 {
		return "", []string{}, []float64{}, nil
	}
	// The corpus size is the planner's estimate on a large table (counting it reads every row);
	// document frequencies are counted through the GIN index.
	rows, err := tx.Query(ctx, `WITH est AS (SELECT COALESCE((SELECT reltuples::bigint FROM pg_class
			WHERE oid = to_regclass('knowledge_chunks')), -1) AS r)
		SELECT CASE WHEN est.r >= 5000 THEN est.r ELSE (SELECT COUNT(*) FROM knowledge_chunks) END, t,
			(SELECT COUNT(*) FROM knowledge_chunks WHERE search_tsv @@ to_tsquery('simple', t))
		FROM est, unnest($1::text[]) AS t`, qs)
	if err != nil {
		return "", nil, nil, err
	}
	defer rows.Close()
	type tw struct {
		q   string
		df  float64
		idf float64
	}
	var all []tw
	n := 0.0
	for rows.Next() {
		var total, df int64
		var q string
		if err := rows.Scan(&total, &q, &df); err != nil {
			return "", nil, nil, err
		}
		n = float64(total)
		if df > 0 {
			all = append(all, tw{q, float64(df), math.Log(1 + (float64(total)-float64(df)+0.5)/(float64(df)+0.5))})
		}
	}
	if err := rows.Err(); err != nil {
		return "", nil, nil, err
	}
	var keep []string
	rarest := -1
	for i, w := range all {
		if w.df <= n/2 {
			keep = append(keep, w.q)
			quoted = append(quoted, w.q)
			weights = append(weights, w.idf)
		}
		if rarest < 0 || w.df < all[rarest].df {
			rarest = i
		}
	}
	if len(keep) == 0 && rarest >= 0 {
		keep = []string{all[rarest].q}
		quoted, weights = keep, []float64{all[rarest].idf}
	}
	if quoted == nil {
		quoted, weights = []string{}, []float64{}
	}
	return strings.Join(keep, " | "), quoted, weights, nil
}
