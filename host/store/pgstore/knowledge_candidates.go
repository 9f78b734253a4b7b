package pgstore

import (
	"context"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/pgvector/pgvector-go"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/sqldb"
)

// tsQuote strips the characters to_tsquery would read as syntax from a term.
var tsQuote = strings.NewReplacer(`'`, ``, `\`, ``)

// tsQuery is an OR of the terms for to_tsquery('simple', ...); terms carry only letters and digits.
func tsQuery(terms []string) string {
	parts := make([]string, 0, len(terms))
	for _, t := range terms {
		t = tsQuote.Replace(t)
		if t != "" {
			parts = append(parts, "'"+t+"'")
		}
		if len(parts) == 64 {
			break
		}
	}
	return strings.Join(parts, " | ")
}

// KeywordCandidates implements store.Knowledge: the keyword leg's candidates, by the idf-weighted
// ts_rank over search_tsv of the rows keywordRows picks (kb then ranks them by its own BM25).
// With the pgvector path and a query vector of the halfvec column's dimension, each row comes
// with its cosine with it (store.SearchParams.Vector), as VectorCandidates computes it.
func (d *Driver) KeywordCandidates(ctx context.Context, p store.SearchParams) ([]store.ChunkRow, error) {
	run := func(ctx context.Context, q string, args []any, scan func(sqldb.Row) error) error {
		return d.searchQuery(ctx, 0, q, args, scan)
	}
	ws, err := termWeights(ctx, run, d.df, p.Terms)
	if err != nil || len(ws) == 0 {
		return nil, err
	}
	var a sqldb.Args
	vis, docs := visibility(p.Viewer, &a)
	m := keywordRows(ws, &a, docs)
	cos, withCos := `NULL::float8`, ""
	if d.vector && len(p.Vector) == vectorDims {
		// The cosine of the rows returned here, where the row is read anyway, saves the search a
		// statement after both legs (VectorCandidates for the rows its index scan did not return).
		withCos = ` LEFT JOIN knowledge_embeddings e ON e.chunk_id = c.id AND e.model = c.embedding_model AND e.model = ` + a.Add(p.Model)
		cos = cosine(`e.embedding_vector <=> ` + a.Add(pgvector.NewHalfVector(p.Vector)) + `::halfvec`)
	}
	q := `WITH vis AS MATERIALIZED (SELECT s.id FROM knowledge_sources s WHERE ` + vis + `),
			m AS (` + m + `),
			kw AS MATERIALIZED (SELECT m.id, m.kr AS k FROM m ORDER BY k DESC, m.id LIMIT ` + a.Add(p.Limit) + `)
		SELECT ` + candidateCols(p.Terms, &a) + `, kw.k, ` + cos + ` FROM kw JOIN knowledge_chunks c ON c.id = kw.id` + withCos + ` ORDER BY kw.k DESC, c.id`
	var out []store.ChunkRow
	err = d.searchQuery(ctx, 0, q, a.List, func(r sqldb.Row) error {
		var k float64
		var cos *float64
		c, err := scanCandidate(r, &k, &cos)
		if err != nil {
			return err
		}
		c.Keyword = k
		if cos != nil {
			c.Vector, c.HasVector = *cos, true
		}
		out = append(out, c)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, d.searchTexts(ctx, out)
}

// candidateCols are the columns of a chunk (alias c) the candidate legs return, read by
// scanCandidate: what ranking needs, all of it in the chunk's row. The text (in the TOAST table)
// and the document's and source's names (two joins) are read for the hits alone (ChunksByID).
//
// Of the search text, BM25 reads only the number of terms and the frequencies of the query's
// (rank.Candidate): its term count is token_count (kb's ingest counts the terms it writes), and
// the frequencies are the lengths of the query terms' position lists in search_tsv (searchVector:
// a position per occurrence), which the row holds inline: setweight marks the query terms'
// positions with weight A, ts_filter keeps those lexemes alone (stored values carry weight D
// alone, see keywordRank). Reading the search text instead was a TOAST
// read and an lz4 decompression a candidate, about 6 µs of the server's CPU each, for some 300
// candidates a search, and its transfer and a scan of each text on the host (the target: search
// p95 at 100k chunks, BENCHMARKS.md). Where the positions cannot tell (countsOf), the text is
// read after all (searchTexts).
//
// Without terms (the cosines of rows a search holds already) there is nothing to count, and the
// value is NULL rather than an empty filter of every row's search_tsv, which would decompress it.
func candidateCols(terms []string, a *sqldb.Args) string {
	counts := `NULL::tsvector`
	if len(terms) > 0 {
		counts = `ts_filter(setweight(c.search_tsv, 'A', ` + a.Add(terms) + `::text[]), '{a}')`
	}
	return `c.id, c.document_id, c.source_id, c.token_count, ` + counts + `, c.embedding_model`
}

// scanCandidate reads candidateCols, then extra destinations, into a partial row: with TermFreq,
// or, when the positions cannot tell the frequencies (countsOf), with neither TermFreq nor
// SearchText, for searchTexts to fill.
func scanCandidate(r sqldb.Row, extra ...any) (store.ChunkRow, error) {
	c := store.ChunkRow{Partial: true}
	var n int32
	var tsv pgtype.TSVector
	err := r.Scan(append([]any{&c.ID, &c.DocumentID, &c.SourceID, &n, &tsv, &c.EmbeddingModel}, extra...)...)
	if err != nil {
		return c, err
	}
	c.TermCount = int(n)
	c.TermFreq = countsOf(tsv, c.TermCount)
	return c, nil
}

// countsOf returns the frequency of each lexeme of tsv (the query terms of a row's search_tsv) in
// the row's search text of n terms: the number of its positions, one an occurrence (every stored
// value has positions: searchVector's, to_tsvector's). nil where that may not be the frequency:
// PostgreSQL keeps at most tsMaxPositions positions a lexeme and counts every position past
// tsMaxPosition as that one. A term count of 0 is a chunk without terms, or one written without
// its count: its text tells which.
func countsOf(tsv pgtype.TSVector, n int) map[string]int {
	if !tsv.Valid || n <= 0 || n >= tsMaxPosition {
		return nil
	}
	out := make(map[string]int, len(tsv.Lexemes))
	for _, l := range tsv.Lexemes {
		if len(l.Positions) == 0 || len(l.Positions) >= tsMaxPositions {
			return nil
		}
		out[l.Word] = len(l.Positions)
	}
	return out
}

// searchTexts reads the search text of the rows of a candidate leg whose term frequencies its
// positions could not tell (scanCandidate), in one statement; none in most searches.
func (d *Driver) searchTexts(ctx context.Context, rows []store.ChunkRow) error {
	at := map[string]int{}
	var ids []string
	for i, r := range rows {
		if r.TermFreq == nil {
			at[r.ID] = i
			ids = append(ids, r.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	return sqldb.QueryEach(ctx, d.DB, `SELECT id, search_text FROM knowledge_chunks WHERE id = ANY($1::text[])`, []any{ids},
		func(r sqldb.Row) error {
			var id, text string
			if err := r.Scan(&id, &text); err != nil {
				return err
			}
			rows[at[id]].SearchText = text
			return nil
		})
}

// visibility is the condition of v on sources (alias s), for the vis CTE, and the one of its
// DocumentIDs filter on chunks (alias c): TRUE without one.
func visibility(v store.Viewer, a *sqldb.Args) (vis, docs string) {
	vis, docs = sqldb.Visible(v, a, ""), "TRUE"
	if len(v.DocumentIDs) > 0 {
		docs = a.In("c.document_id", v.DocumentIDs)
	}
	return vis, docs
}

// keywordRank is the raw keyword score of the stored tsvector tsv: ts_rank of the simple
// configuration per query term of ws (0 for a term the row lacks), weighted by the term's idf
// (ts_rank alone ignores how common a term is), summed rarest term first. ts_rank's default
// weights give class D 0.1, and the stored values carry no other class (searchVector, and
// to_tsvector of the trigger, write D), so the weights are left out: an array of them, which
// ts_rank read again at each call, cost about a fifth of the ranking a row (0.8 of 4.5 ms of the
// keyword statement's CPU at 100k chunks, loaded, with the same ranks). One
// expression, computed where the row is read: the subquery per row it replaces (a sum over a
// CTE of the terms, over a setweight copy of the value) cost about 20 µs a row more at 100k
// chunks, most of the keyword statement's time (target: search p95 at 100k chunks,
// BENCHMARKS.md). ts_rank decompresses a stored (lz4) value at each call, once per term: tsv is
// a decompressed copy (detoasted). Each term's tsquery is an InitPlan, parsed once per
// statement whatever the plan.
func keywordRank(tsv string, ws []termWeight, a *sqldb.Args) string {
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = a.Add(w.idf) + `::float8 * ts_rank(` + tsv + `, (SELECT to_tsquery('simple', ` + a.Add(w.q) + `)))`
	}
	return `(` + strings.Join(parts, " + ") + `)`
}

// searchSettings are the transaction's planner settings for a search. Iterative index scans keep
// the HNSW scan returning neighbours while the visibility filter rejects some (up to
// hnsw.max_scan_tuples), so a reader of a small part of a large corpus still gets its candidates;
// ef_search, the candidate list one pass keeps, must cover them. Under a LIMIT the planner
// prefers a sequential scan for a common term, which decompresses the tsvector of every row it
// passes to test it; the GIN bitmap reads only the rows that hold the term. The cost penalty of
// a disabled plan would in turn trip JIT compilation (seconds, for a query that runs in ms), which
// is why the driver's connections have JIT off (Open).
//
// The statements keep custom plans (planned at each execution, 1 to 2.4 ms a statement at 100k
// chunks): a generic plan cannot see how many rows a term or a viewer's sources select, and for a
// viewer of one small source and a common term it read every GIN match of the term (41 to 77 ms
// on 200k chunks) where the custom plan reads the source's rows alone (0.1 to 0.3 ms).
func searchSettings(ctx context.Context, tx *sqldb.DB, efSearch int) error {
	_, err := tx.Exec(ctx, searchSettingsSQL, efSearchSetting(efSearch))
	return err
}

// searchSettingsSQL sets searchSettings' values for the rest of the transaction ($1: ef_search).
const searchSettingsSQL = `SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true),
		set_config('hnsw.ef_search', $1, true), set_config('enable_seqscan', 'off', true)`

// efSearchSetting is hnsw.ef_search for efSearch, within pgvector's range (1 to 1000) and at
// least 40 (its default).
func efSearchSetting(efSearch int) string { return strconv.Itoa(min(1000, max(40, efSearch))) }

// searchQuery runs q under a search's planner settings (searchSettings, ef_search for efSearch)
// and calls scan on each row of its answer. Outside a transaction the settings and q go to the
// server together, one pipelined batch: the statements of a batch run in one implicit
// transaction, which keeps the settings local to it, so each statement of a search is one round
// trip where BEGIN, the settings, the statement and COMMIT were four (on a loaded machine each
// round trip waits for the CPU twice; the target is search p95 at 100k chunks, BENCHMARKS.md).
// In a transaction (InTx) the settings go first, in it.
func (d *Driver) searchQuery(ctx context.Context, efSearch int, q string, args []any, scan func(sqldb.Row) error) error {
	if d.DB.InTransaction() {
		if err := searchSettings(ctx, d.DB, efSearch); err != nil {
			return err
		}
		return sqldb.QueryEach(ctx, d.DB, q, args, scan)
	}
	var b pgx.Batch
	b.Queue(searchSettingsSQL, efSearchSetting(efSearch))
	b.Queue(q, args...)
	br := d.pool.SendBatch(ctx, &b)
	err := func() error {
		if _, err := br.Exec(); err != nil {
			return err
		}
		rows, err := br.Query()
		if err != nil {
			return err
		}
		return sqldb.EachRow(rowsAdapter{rows}, scan)
	}()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return mapError(err)
}

// runQuery runs q and calls scan on each row of its answer (searchQuery, or sqldb.QueryEach on a DB).
type runQuery func(ctx context.Context, q string, args []any, scan func(sqldb.Row) error) error

// NearestEmbeddings returns the ids of the n chunks whose vectors are nearest to v (cosine),
// through the HNSW index under the settings of a search asking for n candidates, or with exact
// set by a sequential scan. The bench compares the two for the index's recall.
func (d *Driver) NearestEmbeddings(ctx context.Context, v []float32, n int, exact bool) ([]string, error) {
	if !d.vector {
		return nil, store.ErrNotSupported
	}
	var ids []string
	err := d.DB.WithTx(ctx, func(tx *sqldb.DB) error {
		set := searchSettings(ctx, tx, 2*n) // as VectorCandidates sets them for n candidates
		if exact {
			_, set = tx.Exec(ctx, `SELECT set_config('enable_indexscan', 'off', true), set_config('enable_bitmapscan', 'off', true)`)
		}
		if set != nil {
			return set
		}
		rows, err := tx.Query(ctx, `SELECT id FROM (`+nearestLeg("$1", "TRUE", "$2")+`) n ORDER BY dist, id`, pgvector.NewHalfVector(v), n)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return rows.Err()
	})
	return ids, err
}

// nearestLeg is the vector leg's query: the n rows (id, dist: cosine distance to the query vector
// v, a placeholder) nearest to v among the embeddings that cond (a condition on e: its chunk_id and
// model) admits. The rows in the HNSW index (vector_indexed) come from an index scan, those the
// indexer has not reached yet from an exact scan of that set (the pending index lists them): a
// chunk is found from the commit of its ingest on, and the search never waits for the indexer.
//
// The exact scan ranks every pending row by distance first and tests cond on them nearest first,
// stopping at n (the subquery's OFFSET 0 keeps the planner from pushing cond into it): cond, a
// visibility probe of the chunk, cost about three times the distance itself, so testing it on
// every pending row made each of them cost a search about 10 µs of the server's CPU; tested on
// about n of them, a pending row costs about 2.5 µs (BENCHMARKS.md, search with rows pending). The
// indexer's backlog bound (indexBacklog) is priced in that cost.
func nearestLeg(v, cond, n string) string {
	indexed := `(SELECT e.chunk_id AS id, e.embedding_vector <=> ` + v + `::halfvec AS dist FROM knowledge_embeddings e
			WHERE e.vector_indexed AND ` + cond + ` ORDER BY dist LIMIT ` + n + `)`
	pending := `(SELECT e.chunk_id AS id, e.dist FROM (SELECT chunk_id, model, embedding_vector <=> ` + v + `::halfvec AS dist
			FROM knowledge_embeddings WHERE NOT vector_indexed AND embedding_vector IS NOT NULL ORDER BY dist OFFSET 0) e
			WHERE ` + cond + ` ORDER BY e.dist LIMIT ` + n + `)`
	return `SELECT nn.id, nn.dist FROM (` + indexed + ` UNION ALL ` + pending + `) nn ORDER BY nn.dist, nn.id LIMIT ` + n
}

// Search sizes. The keyword leg reads and ranks a tsvector per matching row (about 10 µs each:
// the stored tsvector is compressed), so it scores at most keywordBudget rows, taken rarest term
// first; the vector leg is an HNSW scan whose ef_search follows the candidates it must return.
const (
	keywordBudget = 1500
	dfCap         = 1000 // document frequencies are counted exactly up to here, estimated above
	maxStages     = 8    // stages of the keyword leg's row selection (see keywordRows)
)

// VectorCandidates implements store.Knowledge: the vector leg over the HNSW index, under the
// visibility filter: the p.Limit nearest chunks, then the cosines of the p.ChunkIDs the index scan
// did not return (each computed for that row alone). Only candidates and their cosines: the
// ranking is host/kb/rank's, the same on every path.
func (d *Driver) VectorCandidates(ctx context.Context, p store.SearchParams) ([]store.ChunkRow, error) {
	if !d.vector || len(p.Vector) != vectorDims {
		return nil, store.ErrNotSupported
	}
	var a sqldb.Args
	v := a.Add(pgvector.NewHalfVector(p.Vector))
	model := a.Add(p.Model)
	vis, docs := visibility(p.Viewer, &a)
	ids := p.ChunkIDs
	if ids == nil {
		ids = []string{}
	}
	with := `WITH vis AS MATERIALIZED (SELECT s.id FROM knowledge_sources s WHERE ` + vis + `)`
	dist := `e.embedding_vector <=> ` + v + `::halfvec`
	known := `FROM knowledge_chunks c JOIN knowledge_embeddings e ON e.chunk_id = c.id AND e.model = c.embedding_model
			WHERE c.id = ANY(` + a.Add(ids) + `::text[]) AND e.model = ` + model + ` AND c.source_id IN (SELECT id FROM vis) AND ` + docs
	var q string
	if p.Limit == 0 {
		// The cosines of the chunks asked about alone (a search's hits, read after ranking): one
		// join, without the index scan's CTEs, whose planning was most of the statement's server
		// CPU (about 0.8 of 1 ms at 100k chunks, for a statement a search).
		q = with + ` SELECT ` + candidateCols(p.Terms, &a) + `, ` + cosine(dist) + ` ` + known + ` ORDER BY ` + dist + `, c.id`
	} else {
		q = with + `,
		vn AS MATERIALIZED (` + nearestLeg(v, `EXISTS (SELECT 1 FROM knowledge_chunks c WHERE c.id = e.chunk_id AND e.model = `+model+`
				AND c.embedding_model = e.model AND c.source_id IN (SELECT id FROM vis) AND `+docs+` OFFSET 0)`, a.Add(p.Limit)) + `),
		kn AS (SELECT c.id, ` + dist + ` AS dist ` + known + `
				AND NOT EXISTS (SELECT 1 FROM vn WHERE vn.id = c.id)),
		u AS (SELECT id, dist, 0 AS leg FROM vn UNION ALL SELECT id, dist, 1 FROM kn)
		SELECT ` + candidateCols(p.Terms, &a) + `, ` + cosine(`u.dist`) + ` FROM u JOIN knowledge_chunks c ON c.id = u.id ORDER BY u.leg, u.dist, c.id`
	}
	var out []store.ChunkRow
	// Twice the candidates: with the index's small graph (m 8, see vectorIndex) an ef_search of
	// 2*limit finds the true nearest neighbours about as often as pgvector's default graph with
	// ef_search = limit did, at about the same cost.
	err := d.searchQuery(ctx, 2*p.Limit, q, a.List, func(r sqldb.Row) error {
		var cos float64
		c, err := scanCandidate(r, &cos)
		if err != nil {
			return err
		}
		c.Vector, c.HasVector = cos, true
		out = append(out, c)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(p.Terms) == 0 { // the cosines of known rows (candidateCols): no BM25 to feed
		return out, nil
	}
	return out, d.searchTexts(ctx, out)
}

// cosine is the cosine similarity, clamped to 0..1, of the cosine distance dist (an expression,
// evaluated once): 0 without one (no vector), and 0 for a zero vector (a text without terms),
// whose distance is NaN, as rank.Cosine gives it.
func cosine(dist string) string {
	return `GREATEST(0, LEAST(1, COALESCE(1 - NULLIF(` + dist + `, 'NaN'::float8), 0)))`
}

// keywordRows is the query of the keyword leg's rows (id, kr: keywordRank) under the visibility of the vis
// CTE and the document condition docs. When the terms together match at most keywordBudget rows,
// that is every row matching any term. Otherwise the budget goes first to the rows holding the
// three rarest terms, then to those of each term, rarest first (each stage leaves out the rows of
// the earlier ones; the last of maxStages takes all the remaining terms), so the rows scored are
// the ones BM25-like ranking favours: a UNION ALL under a LIMIT stops reading as soon as the
// budget is spent. No row comes twice (the rarest term's stage leaves out the first stage's
// rows): a row twice among the candidates was a hit twice in the search's results.
//
// Each row's search_tsv is decompressed once (detoasted), and ranked above the stages, once for
// all of them: ranked in each stage, it was decompressed again by each ts_rank, and by the test
// leaving out the earlier stages' rows, which the GIN index now does (a NOT in the stage's
// tsquery: the same rows, in the same order, the heap's). Decompressing was a third of the
// keyword statement's instructions at 100k chunks; the statement now takes 16% fewer (50.0 M to
// 41.8 M a statement, callgrind over the bench's statements, the same rows and scores;
// BENCHMARKS.md, search at 100k).
func keywordRows(ws []termWeight, a *sqldb.Args, docs string) string {
	if len(ws) == 0 {
		return `SELECT NULL::text AS id, NULL::int AS len, NULL::float8 AS kr WHERE FALSE`
	}
	stage := func(match, not string) string {
		if not != "" {
			match = `(` + match + `) & !(` + not + `)`
		}
		return `SELECT c.id, c.token_count AS len, ` + detoasted("c.search_tsv") + ` AS tsv FROM knowledge_chunks c WHERE c.search_tsv @@ to_tsquery('simple', ` + a.Add(match) + `)
			AND c.source_id IN (SELECT id FROM vis) AND ` + docs
	}
	all := make([]string, len(ws))
	total := 0.0
	for i, w := range ws {
		all[i] = w.q
		total += w.df
	}
	budget := strconv.Itoa(keywordBudget)
	ranked := func(rows string) string {
		return `SELECT r.id, r.len, ` + keywordRank("r.tsv", ws, a) + ` AS kr FROM (` + rows + ` LIMIT ` + budget + `) r`
	}
	if total <= keywordBudget || len(ws) == 1 {
		return ranked(stage(strings.Join(all, " | "), ""))
	}
	first := strings.Join(all[:min(3, len(all))], " & ")
	parts := []string{`(` + stage(first, "") + ` LIMIT ` + budget + `)`}
	for i := range ws {
		match, not := ws[i].q, strings.Join(all[:i], " | ")
		if i == 0 {
			// The first stage's rows hold this term too: each row comes once.
			not = first
		}
		if i == maxStages-1 {
			match = strings.Join(all[i:], " | ")
		}
		parts = append(parts, `(`+stage(match, not)+` LIMIT `+budget+`)`)
		if i == maxStages-1 {
			break
		}
	}
	return ranked(strings.Join(parts, " UNION ALL "))
}

// detoasted is the tsvector tsv (a column) as a value of its own, decompressed: each function
// reading a stored tsvector decompresses it (the lz4 datum in the row, over 2 KB), once per call,
// and a keyword row is read by ts_rank once per query term. setweight with no lexemes to mark is
// a copy of the value, unchanged.
func detoasted(tsv string) string {
	return `setweight(` + tsv + `, 'D', '{}'::text[])`
}
