package pgstore

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/sqldb"
	"github.com/reelforge/reelforge/host/store/storetest"
)

// statementCounts is the corpus and document frequencies of forms as the one statement that read
// pg_stats on every miss gave them (before termStats kept the statistics with the corpus): the
// reference termCounts must match exactly, as the search's scores rest on them.
func statementCounts(ctx context.Context, t *testing.T, d *Driver, forms []string) (sqldb.Corpus[float64], map[string]float64) {
	t.Helper()
	lex := make([]string, len(forms))
	for i, q := range forms {
		lex[i] = strings.Trim(q, "'")
	}
	var n sqldb.Corpus[float64]
	df := map[string]float64{}
	err := sqldb.QueryEach(ctx, d.DB, `WITH rel AS (SELECT k.reltuples::bigint AS r, n.nspname AS ns FROM pg_class k
			JOIN pg_namespace n ON n.oid = k.relnamespace WHERE k.oid = to_regclass('knowledge_chunks')),
		est AS (SELECT COALESCE((SELECT r FROM rel), -1) AS r),
		st AS MATERIALIZED (SELECT ps.most_common_elems::text::text[] AS e, ps.most_common_elem_freqs AS f FROM pg_stats ps, rel
			WHERE ps.schemaname = rel.ns AND ps.tablename = 'knowledge_chunks' AND ps.attname = 'search_tsv')
		SELECT CASE WHEN NOT $4 THEN 0 WHEN est.r >= 5000 THEN est.r ELSE (SELECT COUNT(*) FROM knowledge_chunks) END,
			CASE WHEN NOT $4 THEN NULL
				WHEN est.r >= 5000 THEN (SELECT AVG(token_count)::float8 FROM (SELECT token_count FROM knowledge_chunks LIMIT 20000) y)
				ELSE (SELECT AVG(token_count)::float8 FROM knowledge_chunks) END, x.q,
			CASE WHEN est.r >= 5000 AND x.f > 0 THEN -1 ELSE
				(SELECT COUNT(*) FROM (SELECT 1 FROM knowledge_chunks WHERE search_tsv @@ to_tsquery('simple', x.q) LIMIT $3) y) END,
			x.f
		FROM est, (SELECT u.q, COALESCE((SELECT st.f[array_position(st.e, u.l)] FROM st), 0) AS f
			FROM unnest($1::text[], $2::text[]) AS u(q, l)) x`, []any{forms, lex, dfCap, true}, func(r sqldb.Row) error {
		var total, count int64
		var avg *float64
		var q string
		var freq float64
		if err := r.Scan(&total, &avg, &q, &count, &freq); err != nil {
			return err
		}
		n.N = float64(total)
		if avg != nil {
			n.AvgLen = *avg
		}
		f := float64(count)
		if count < 0 || count >= dfCap {
			f = math.Max(f, freq*n.N)
		}
		df[q] = f
		return nil
	})
	if err != nil {
		t.Fatalf("the reference statement: %v", err)
	}
	return n, df
}

// TestTermCountsMatchStatement: the document frequencies and corpus termCounts gives, from the
// statistics it keeps with the corpus, are exactly those of the statement that read them on each
// miss: on a large table (over 5000 chunks, ANALYZEd) with common terms (estimated from the
// statistics), terms counted through the GIN index, capped ones with and without statistics, and
// absent ones; on a small table (counted, the statistics only for capped terms); filled term by
// term into a kept corpus (a miss with the statistics kept). A miss of common terms alone, into a
// kept corpus, takes no statement.
func TestTermCountsMatchStatement(t *testing.T) {
	ctx := context.Background()
	url := storetest.PostgresURL(t)
	schema := storetest.SchemaName()
	d, err := Open(ctx, url, Options{Schema: schema})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		d.Close()
		storetest.DropSchema(url, schema)
	})
	statements := 0
	run := func(ctx context.Context, q string, args []any, scan func(sqldb.Row) error) error {
		statements++
		return sqldb.QueryEach(ctx, d.DB, q, args, scan)
	}
	u := storetest.NewUser(t, d, "")
	res, err := d.AddDocument(ctx, store.NewSourceParams{CreatedBy: u.ID, Name: "df", Visibility: store.VisibilityPrivate},
		&store.KnowledgeDocument{ID: uuid.NewString(), UserID: u.ID, Filename: "f.txt", FileHash: "h"})
	if err != nil {
		t.Fatalf("AddDocument: %v", err)
	}
	// Row i holds "common"; "half" every other row; w0..w2, k0..k3, m0..m4, mid0..mid6 by i's
	// remainders (2000, 1500, 1200 and about 857 rows each); "tenth" every tenth row; and r<i>, its own.
	_, err = d.pool.Exec(ctx, `INSERT INTO knowledge_chunks (id, source_id, document_id, chunk_index, chunk_text, token_count, search_text, created_at)
		SELECT 'c' || i, $1, $2, i, '', 6 + i % 3, concat_ws(' ', 'common', CASE WHEN i % 2 = 0 THEN 'half' END,
			'w' || i % 3, 'k' || i % 4, 'm' || i % 5, 'mid' || i % 7, CASE WHEN i % 10 = 0 THEN 'tenth' END, 'r' || i), now()
		FROM generate_series(0, 5999) i`, res.Source.ID, res.Document.ID)
	if err != nil {
		t.Fatalf("insert chunks: %v", err)
	}
	var forms []string
	for _, term := range []string{"common", "half", "tenth", "w0", "w2", "k1", "k3", "m0", "m4", "mid0", "mid6", "r17", "r5999", "absent", "o'neil"} {
		forms = append(forms, tsQuery([]string{term}))
	}
	check := func(name string) {
		t.Helper()
		wantN, want := statementCounts(ctx, t, d, forms)
		// All at once from an empty cache, then term by term into the corpus kept.
		cache := newTermCounts()
		n, got, err := termCounts(ctx, run, cache, forms)
		if err != nil {
			t.Fatalf("%s: termCounts: %v", name, err)
		}
		one := newTermCounts()
		for _, q := range forms {
			n1, got1, err := termCounts(ctx, run, one, []string{q})
			if err != nil {
				t.Fatalf("%s: termCounts(%s): %v", name, q, err)
			}
			if n1.N != wantN.N || n1.AvgLen != wantN.AvgLen || got1[q] != want[q] {
				t.Errorf("%s: one term into a kept corpus: df[%s] = %v over %v (mean length %v), want %v over %v (%v)",
					name, q, got1[q], n1.N, n1.AvgLen, want[q], wantN.N, wantN.AvgLen)
			}
		}
		if n.N != wantN.N || n.AvgLen != wantN.AvgLen {
			t.Errorf("%s: corpus %v chunks, mean length %v; want %v, %v", name, n.N, n.AvgLen, wantN.N, wantN.AvgLen)
		}
		for _, q := range forms {
			if got[q] != want[q] {
				t.Errorf("%s: df[%s] = %v, want %v", name, q, got[q], want[q])
			}
		}
		t.Logf("%s: %v chunks, df %v", name, n.N, fmt.Sprint(got))
	}
	analyze := func() {
		t.Helper()
		if _, err := d.pool.Exec(ctx, `ANALYZE knowledge_chunks`); err != nil {
			t.Fatalf("ANALYZE: %v", err)
		}
	}
	analyze()
	check("6000 chunks")
	// A miss whose terms are all common, into a kept corpus, takes no statement.
	cache := newTermCounts()
	if _, _, err := termCounts(ctx, run, cache, []string{"'r17'"}); err != nil {
		t.Fatalf("termCounts: %v", err)
	}
	statements = 0
	if _, got, err := termCounts(ctx, run, cache, []string{"'common'", "'w1'"}); err != nil || statements != 0 || got["'common'"] == 0 {
		t.Errorf("common terms into a kept corpus: df %v, %v, %d statements; want their estimates and no statement", got, err, statements)
	}
	// With a statistics target of 1 the column keeps about ten common lexemes: the others above
	// dfCap are capped without an estimate.
	if _, err := d.pool.Exec(ctx, `ALTER TABLE knowledge_chunks ALTER COLUMN search_tsv SET STATISTICS 1`); err != nil {
		t.Fatalf("SET STATISTICS: %v", err)
	}
	analyze()
	check("6000 chunks, few statistics")
	if _, err := d.pool.Exec(ctx, `ALTER TABLE knowledge_chunks ALTER COLUMN search_tsv SET STATISTICS -1`); err != nil {
		t.Fatalf("SET STATISTICS: %v", err)
	}
	if _, err := d.pool.Exec(ctx, `DELETE FROM knowledge_chunks WHERE chunk_index >= 3000`); err != nil {
		t.Fatalf("delete: %v", err)
	}
	analyze()
	check("3000 chunks")
}
