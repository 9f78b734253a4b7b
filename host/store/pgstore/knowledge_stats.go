package pgstore

import (
	"context"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/sqldb"
)

// termWeight is one query term that counts: its to_tsquery form, document frequency and idf.
type termWeight struct {
	q   string
	df  float64
	idf float64
}

// termWeights returns the query terms that count, rarest first: all of them when they match no
// more than keywordBudget rows together, else those held by at most half the chunks (or the
// rarest one when all are that common; the others weigh almost nothing in BM25's idf), each with
// its idf, ln(1 + (n - df + 0.5) / (df + 0.5)).
//
// On a large table (5000 chunks and more) the corpus size is the planner's estimate (counting it
// reads every row) and a term among the most common lexemes of the tsvector column's statistics
// takes its frequency from there: counting a common term reads every row holding it, the cost
// the keyword budget avoids. Other terms are counted through the GIN index, up to dfCap (a term
// that reaches it without statistics counts as dfCap). Those statistics are as fresh as the last
// ANALYZE, which the indexer runs at the pause after this host's writes once they changed more
// than 50 rows and 2% of the table since (analyzeIfStale), so they follow ingests and deletions.
//
// Counting a few dozen terms (a Chinese question is many unigrams and bigrams) costs more than
// the search itself, so the frequencies and the corpus size are kept in cache (newTermCounts: 30 s)
// and dropped at each write of this host; other hosts' writes show within those 30 s, and idf moves
// little meanwhile.
func termWeights(ctx context.Context, run runQuery, cache *sqldb.TermCounts[float64], terms []string) ([]termWeight, error) {
	if len(terms) > 64 {
		terms = terms[:64]
	}
	var forms []string
	seen := map[string]bool{}
	for _, t := range terms {
		if q := tsQuery([]string{t}); q != "" && !seen[q] {
			seen[q] = true
			forms = append(forms, q)
		}
	}
	if len(forms) == 0 {
		return nil, nil
	}
	n, df, err := termCounts(ctx, run, cache, forms)
	if err != nil {
		return nil, err
	}
	var all []termWeight
	for _, q := range forms {
		if df[q] > 0 {
			all = append(all, termWeight{q: q, df: df[q]})
		}
	}
	return weigh(all, n.N), nil
}

// termCounts returns the corpus size and the document frequency of each of forms (terms in their
// to_tsquery form, tsQuery of one term), from the cache or counted as termWeights says.
func termCounts(ctx context.Context, run runQuery, cache *sqldb.TermCounts[float64], forms []string) (sqldb.Corpus[float64], map[string]float64, error) {
	n, df, qs := cache.Lookup(forms)
	if len(qs) == 0 {
		if n.N == 0 { // no term to count, and no corpus kept: count the corpus alone
			var avg *float64
			var total int64
			err := run(ctx, `SELECT COUNT(*), AVG(token_count)::float8 FROM knowledge_chunks`, nil, func(r sqldb.Row) error { return r.Scan(&total, &avg) })
			if err != nil {
				return n, nil, err
			}
			n.N = float64(total)
			if avg != nil {
				n.AvgLen = *avg
			}
		}
		return n, df, nil
	}
	// With a corpus kept in the cache only the missing terms are counted: its size and mean
	// length (a read of up to 20,000 rows on a large table, most of a search's time at 100k chunks
	// when it ran for every new term; the target is search p95 at 100k chunks, BENCHMARKS.md) stay
	// as the cache has them until it expires or a write of this host drops it, and so do the
	// column statistics read with them (termStats). Rule: another host's writes, and an ANALYZE,
	// show in them within the cache's 30 s, as in the frequencies.
	st, _ := n.Stats.(*termStats)
	if n.N == 0 || st == nil {
		var err error
		if n, st, err = readCorpus(ctx, run); err != nil {
			return sqldb.Corpus[float64]{}, nil, err
		}
	}
	fresh := map[string]float64{}
	var count []string // the terms counted through the GIN index
	for _, q := range qs {
		if freq := st.freq[strings.Trim(q, "'")]; st.est >= 5000 && freq > 0 {
			fresh[q] = float64(freq) * n.N
		} else {
			count = append(count, q)
		}
	}
	if len(count) > 0 {
		err := run(ctx, `SELECT u.q, (SELECT COUNT(*) FROM (SELECT 1 FROM knowledge_chunks WHERE search_tsv @@ to_tsquery('simple', u.q) LIMIT $2) y)
			FROM unnest($1::text[]) AS u(q)`, []any{count, dfCap}, func(r sqldb.Row) error {
			var q string
			var c int64
			if err := r.Scan(&q, &c); err != nil {
				return err
			}
			f := float64(c)
			if c >= dfCap { // capped: a common term takes its estimate when larger
				f = math.Max(f, float64(st.freq[strings.Trim(q, "'")])*n.N)
			}
			fresh[q] = f
			return nil
		})
		if err != nil {
			return sqldb.Corpus[float64]{}, nil, err
		}
	}
	for q, f := range fresh {
		df[q] = f
	}
	cache.Store(n, fresh)
	return n, df, nil
}

// termStats is what termCounts reads of the planner's statistics, with the corpus (once per cache
// lifetime, not on each miss): the table's estimated row count (-1 without one) and the
// frequencies of the tsvector column's most common lexemes. They change only at an ANALYZE, and
// kept with the corpus they show one within the cache's 30 s, as other hosts' writes do (the
// indexer's own ANALYZE at once: it drops this host's cache). Read
// with each miss (pg_stats, and the cast of its thousand lexemes to text[]), they cost the
// statement ahead of the keyword leg a third of its time; a miss whose terms are all common now
// needs no statement (128 of 312 misses at 100k chunks; BENCHMARKS.md, search at 100k).
type termStats struct {
	est  int64
	freq map[string]float32 // most_common_elem_freqs (real) by lexeme, as pg_stats has them
}

// readCorpus reads the corpus (the planner's row estimate on a large table, 5000 rows and more,
// and the mean length of the first 20,000 rows; else counted) and the statistics of termStats.
func readCorpus(ctx context.Context, run runQuery) (sqldb.Corpus[float64], *termStats, error) {
	var n sqldb.Corpus[float64]
	st := &termStats{freq: map[string]float32{}}
	// st is MATERIALIZED: inlined, the pg_stats view (its joins and privilege checks, and the
	// cast of up to a thousand common lexemes to text[]) was read once per use.
	err := run(ctx, `WITH rel AS (SELECT k.reltuples::bigint AS r, n.nspname AS ns FROM pg_class k
			JOIN pg_namespace n ON n.oid = k.relnamespace WHERE k.oid = to_regclass('knowledge_chunks')),
		est AS (SELECT COALESCE((SELECT r FROM rel), -1) AS r),
		st AS MATERIALIZED (SELECT ps.most_common_elems::text::text[] AS e, ps.most_common_elem_freqs AS f FROM pg_stats ps, rel
			WHERE ps.schemaname = rel.ns AND ps.tablename = 'knowledge_chunks' AND ps.attname = 'search_tsv')
		SELECT est.r, CASE WHEN est.r >= 5000 THEN est.r ELSE (SELECT COUNT(*) FROM knowledge_chunks) END,
			CASE WHEN est.r >= 5000 THEN (SELECT AVG(token_count)::float8 FROM (SELECT token_count FROM knowledge_chunks LIMIT 20000) y)
				ELSE (SELECT AVG(token_count)::float8 FROM knowledge_chunks) END,
			(SELECT e FROM st), (SELECT f FROM st)
		FROM est`, nil, func(r sqldb.Row) error {
		var total int64
		var avg *float64
		var lex []string
		var freq []float32
		if err := r.Scan(&st.est, &total, &avg, &lex, &freq); err != nil {
			return err
		}
		n.N = float64(total)
		if avg != nil {
			n.AvgLen = *avg
		}
		for i, l := range lex {
			if _, dup := st.freq[l]; !dup && i < len(freq) { // the first, as array_position finds it
				st.freq[l] = freq[i]
			}
		}
		return nil
	})
	n.Stats = st
	return n, st, err
}

// TermStats implements store.Knowledge through termCounts (cached, and estimated on a large
// table: the chunk count from the planner's, the mean length from the first 20,000 rows).
func (d *Driver) TermStats(ctx context.Context, terms []string) (store.TermStats, error) {
	form := make(map[string]string, len(terms)) // term -> its to_tsquery form
	forms := make([]string, 0, len(terms))
	for _, t := range terms {
		if q := tsQuery([]string{t}); q != "" {
			form[t] = q
			forms = append(forms, q)
		}
	}
	n, counts, err := termCounts(ctx, func(ctx context.Context, q string, args []any, scan func(sqldb.Row) error) error {
		return sqldb.QueryEach(ctx, d.DB, q, args, scan)
	}, d.df, forms)
	if err != nil {
		return store.TermStats{}, err
	}
	df := make(map[string]int, len(terms))
	for _, t := range terms {
		df[t] = int(math.Round(counts[form[t]])) // 0 for a term with no form
	}
	return store.TermStats{Docs: int(math.Round(n.N)), AvgLen: n.AvgLen, DF: df}, nil
}

// weigh keeps the terms that count, rarest first, with their idf over a corpus of n chunks.
func weigh(all []termWeight, n float64) []termWeight {
	n = math.Max(n, 1)
	sort.SliceStable(all, func(i, j int) bool { return all[i].df < all[j].df })
	total := 0.0
	for _, w := range all {
		total += w.df
	}
	var keep []termWeight
	for _, w := range all {
		// Within the budget every term searches: kb ranks by BM25, which gives a common term a
		// small weight, not none, and a chunk holding only that term is still a candidate, as on
		// SQLite.
		if w.df <= n/2 || total <= keywordBudget {
			keep = append(keep, w)
		}
	}
	if len(keep) == 0 && len(all) > 0 {
		keep = all[:1]
	}
	for i := range keep {
		keep[i].idf = math.Log(1 + math.Max(0, n-keep[i].df+0.5)/(keep[i].df+0.5))
	}
	return keep
}

// newTermCounts is the document-frequency cache of the keyword leg (see termWeights).
func newTermCounts() *sqldb.TermCounts[float64] {
	return &sqldb.TermCounts[float64]{TTL: 30 * time.Second, Max: 100_000}
}
