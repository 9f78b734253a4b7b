package pgstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/pgstore"
	"github.com/reelforge/reelforge/host/store/storetest"
)

// open gives each test its own schema in the TEST_DATABASE_URL database, dropped afterwards.
func open(t *testing.T) store.Driver {
	t.Helper()
	return openWith(t, true)
}

// openVector opens a new schema with pgvector's search path, or skips the test without it.
func openVector(t *testing.T) *pgstore.Driver {
	t.Helper()
	d := open(t)
	if !d.SupportsVectorSearch() {
		t.Skip("pgvector unavailable")
	}
	return d.(*pgstore.Driver)
}

func openWith(t *testing.T, vector bool) store.Driver {
	t.Helper()
	url := storetest.PostgresURL(t)
	schema := storetest.SchemaName()
	ctx := context.Background()
	d, err := pgstore.Open(ctx, url, pgstore.Options{Schema: schema, VectorSearch: vector})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		d.Close()
		storetest.DropSchema(url, schema)
	})
	return d
}

func TestConformance(t *testing.T) { storetest.Run(t, open) }

func TestConformanceWithoutVector(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Driver { return openWith(t, false) })
}

func TestVectorPathReported(t *testing.T) {
	d := open(t)
	t.Logf("pgvector available: %v", d.SupportsVectorSearch())
	if off := openWith(t, false); off.SupportsVectorSearch() {
		t.Errorf("SupportsVectorSearch() with VectorSearch off = true, want false")
	}
}

// TestVectorCandidatesNotStarved: a reader who may see a few chunks among many nearer ones of another
// user still gets them from the vector leg alone (the HNSW scan goes on past the hidden rows).
func TestVectorCandidatesNotStarved(t *testing.T) {
	d := openVector(t)
	ctx := context.Background()
	a, b := storetest.NewUser(t, d, ""), storetest.NewUser(t, d, "")
	var many []string
	for i := 0; i < 300; i++ {
		many = append(many, fmt.Sprintf("zebrafish memo number %d about the quarterly plan", i))
	}
	addChunks(t, d, a.ID, many...)
	mine := addChunks(t, d, b.ID, "zebrafish memo for the launch", "zebrafish memo on lighting", "zebrafish memo draft")
	want := 3
	rows, err := d.VectorCandidates(ctx, store.SearchParams{Viewer: store.Viewer{UserID: b.ID}, Vector: storetest.Vector("zebrafish memo"),
		Model: storetest.Model, Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != want {
		t.Fatalf("VectorCandidates = %d rows, want the reader's %d", len(rows), want)
	}
	for _, r := range rows {
		if r.DocumentID != mine[0] {
			t.Errorf("VectorCandidates shows document %s of another user", r.DocumentID)
		}
	}
}

// addChunks writes texts as one private document of user, one chunk each, and returns its id.
func addChunks(t *testing.T, d store.Driver, user string, texts ...string) []string {
	t.Helper()
	ctx := context.Background()
	res, err := d.AddDocument(ctx, store.NewSourceParams{CreatedBy: user, Name: "s", Visibility: store.VisibilityPrivate},
		&store.KnowledgeDocument{ID: uuid.NewString(), UserID: user, Title: "t", Filename: "f.txt", FileHash: uuid.NewString()})
	if err != nil {
		t.Fatal(err)
	}
	chunks := make([]store.KnowledgeChunk, len(texts))
	for i, tx := range texts {
		chunks[i] = store.KnowledgeChunk{ID: uuid.NewString(), SourceID: res.Source.ID, DocumentID: res.Document.ID, Index: i,
			Text: tx, SearchText: storetest.SearchText(tx), EmbeddingModel: storetest.Model, Embedding: storetest.Vector(tx)}
	}
	if _, err := d.WriteChunks(ctx, store.WriteChunksParams{DocumentID: res.Document.ID, Chunks: chunks}); err != nil {
		t.Fatal(err)
	}
	return []string{res.Document.ID}
}

// TestVectorIndexUpgrade: a database made before migration 0700 (a vector(1536) column, no
// vector_indexed flag, an HNSW index of an earlier name) ends up with the halfvec column and the
// current partial index only, its rows in the index, and opening it again, or from two hosts at
// once, leaves it so.
func TestVectorIndexUpgrade(t *testing.T) {
	url := storetest.PostgresURL(t)
	schema := storetest.SchemaName()
	ctx := context.Background()
	opt := pgstore.Options{Schema: schema, VectorSearch: true}
	d, err := pgstore.Open(ctx, url, opt)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		storetest.DropSchema(url, schema)
	})
	if !d.SupportsVectorSearch() {
		d.Close()
		t.Skip("pgvector unavailable")
	}
	user := storetest.NewUser(t, d, "")
	addChunks(t, d, user.ID, "lighting for a night shoot", "a hook in the first three seconds")
	pool := d.Pool()
	indexes := func() []string {
		t.Helper()
		return queryStrings(t, pool, `SELECT indexname || ' ' || indexdef FROM pg_indexes
			WHERE schemaname = $1 AND tablename = 'knowledge_embeddings' AND indexdef LIKE '%hnsw%' ORDER BY 1`, schema)
	}
	// The database as an earlier version left it.
	if _, err := pool.Exec(ctx, `DROP INDEX knowledge_embeddings_hnsw_h8; DROP INDEX knowledge_embeddings_pending;
		ALTER TABLE knowledge_embeddings DROP COLUMN vector_indexed;
		ALTER TABLE knowledge_embeddings ALTER COLUMN embedding_vector TYPE public.vector(1536) USING embedding_vector::public.vector(1536);
		DELETE FROM schema_migrations WHERE version = 700;
		CREATE INDEX knowledge_embeddings_hnsw ON knowledge_embeddings USING hnsw (embedding_vector public.vector_cosine_ops)`); err != nil {
		t.Fatal(err)
	}
	d.Close()

	errs := make(chan error, 2)
	for range 2 {
		go func() {
			d, err := pgstore.Open(ctx, url, opt)
			if err == nil {
				d.Close()
			}
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("Open of an old database: %v", err)
		}
	}
	d, err = pgstore.Open(ctx, url, opt)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer d.Close()
	pool = d.Pool()
	got := indexes()
	if len(got) != 1 || !strings.HasPrefix(got[0], "knowledge_embeddings_hnsw_h8 ") || !strings.Contains(got[0], "m='8'") ||
		!strings.Contains(got[0], "ef_construction='32'") || !strings.Contains(got[0], "halfvec_cosine_ops") ||
		!strings.Contains(got[0], "WHERE vector_indexed") {
		t.Fatalf("HNSW indexes after the upgrade = %q, want knowledge_embeddings_hnsw_h8 (halfvec, m 8, ef_construction 32, partial) alone", got)
	}
	var typ string
	var pending int
	if err := pool.QueryRow(ctx, `SELECT format_type(atttypid, atttypmod) FROM pg_attribute
		WHERE attrelid = 'knowledge_embeddings'::regclass AND attname = 'embedding_vector'`).Scan(&typ); err != nil || typ != "halfvec(1536)" {
		t.Fatalf("embedding_vector after the upgrade: %q, %v; want halfvec(1536)", typ, err)
	}
	if err := pool.QueryRow(ctx, `SELECT COUNT(*) FROM knowledge_embeddings WHERE NOT vector_indexed`).Scan(&pending); err != nil || pending != 0 {
		t.Fatalf("rows stored before the upgrade left out of the index: %d, %v", pending, err)
	}
	// The search still finds the chunks through the new index.
	wantVectorHits(t, d, user.ID, 2)
}

// wantVectorHits searches user's chunks for "night lighting" through the vector index and wants
// n hits.
func wantVectorHits(t *testing.T, d store.Driver, userID string, n int) {
	t.Helper()
	rows, err := d.VectorCandidates(context.Background(), store.SearchParams{Viewer: store.Viewer{UserID: userID},
		Vector: storetest.Vector("night lighting"), Model: storetest.Model, Limit: 5})
	if err != nil || len(rows) != n {
		t.Fatalf("VectorCandidates = %d rows, %v; want %d", len(rows), err, n)
	}
}

// bulkLoad adds two chunks with the HNSW index in place, drops it as a bulk load does, and adds a
// third: a bulk load up to its BuildVectorIndex.
func bulkLoad(t *testing.T, d *pgstore.Driver, userID string) {
	t.Helper()
	addChunks(t, d, userID, "lighting for a night shoot", "a hook in the first three seconds")
	if err := d.DropVectorIndex(context.Background()); err != nil {
		t.Fatal(err)
	}
	addChunks(t, d, userID, "night lighting with one lamp")
}

// TestBulkVectorIndex: dropping the HNSW index for a bulk load and building it again leaves the
// same search results.
func TestBulkVectorIndex(t *testing.T) {
	d := openVector(t)
	ctx := context.Background()
	user := storetest.NewUser(t, d, "")
	bulkLoad(t, d, user.ID)
	if err := d.BuildVectorIndex(ctx); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := d.Pool().QueryRow(ctx, `SELECT COUNT(*) FROM pg_indexes WHERE schemaname = current_schema()
		AND indexname = 'knowledge_embeddings_hnsw_h8'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("HNSW index after BuildVectorIndex: %d, %v", n, err)
	}
	wantVectorHits(t, d, user.ID, 3)
}

// TestResumedBulkLoadBuildsIndexOnce: a store opened while a bulk load is unfinished (its process
// stopped between DropVectorIndex and BuildVectorIndex) does not build the HNSW index, which the
// resumed load would drop again or build a second time; BuildVectorIndex builds it and ends the
// load.
func TestResumedBulkLoadBuildsIndexOnce(t *testing.T) {
	schema := storetest.SchemaName()
	d := openSchema(t, schema, pgstore.Options{})
	ctx := context.Background()
	user := storetest.NewUser(t, d, "")
	bulkLoad(t, d, user.ID)
	d.Close() // interrupted

	d, err := pgstore.Open(ctx, storetest.PostgresURL(t), pgstore.Options{Schema: schema, VectorSearch: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	hnsw := func() int {
		t.Helper()
		var n int
		if err := d.Pool().QueryRow(ctx, `SELECT COUNT(*) FROM pg_indexes WHERE schemaname = current_schema()
			AND indexname = 'knowledge_embeddings_hnsw_h8'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if bulk, err := d.BulkLoading(ctx); err != nil || !bulk {
		t.Errorf("BulkLoading after a reopen mid-load = %v, %v; want true", bulk, err)
	}
	if n := hnsw(); n != 0 {
		t.Errorf("Open mid-load built the HNSW index (%d): the load's BuildVectorIndex builds it", n)
	}
	if err := d.BuildVectorIndex(ctx); err != nil {
		t.Fatal(err)
	}
	if bulk, err := d.BulkLoading(ctx); err != nil || bulk || hnsw() != 1 {
		t.Errorf("after BuildVectorIndex: BulkLoading %v, %v, HNSW indexes %d; want false, nil, 1", bulk, err, hnsw())
	}
	wantVectorHits(t, d, user.ID, 3)
}

// TestVectorCandidatesScores: each candidate's vector score is its cosine (1 minus its cosine
// distance, clamped to 0..1), whether the index scan found it or it was asked about, and every
// chunk asked about comes back once.
func TestVectorCandidatesScores(t *testing.T) {
	d := openVector(t)
	ctx := context.Background()
	u := storetest.NewUser(t, d, "")
	texts := []string{"night lighting with one lamp", "lighting a night shoot on a budget", "a hook in the first three seconds",
		"captions and music for the intro", "budget microphones compared", "colour grading for night scenes"}
	addChunks(t, d, u.ID, texts...)
	vecs := map[string][]float32{}
	for _, tx := range texts {
		vecs[tx] = storetest.Vector(tx)
	}
	refs, err := d.EmbeddingRefs(ctx, store.Viewer{UserID: u.ID})
	if err != nil || len(refs) != len(texts) {
		t.Fatalf("EmbeddingRefs = %v, %v", refs, err)
	}
	var all []string
	for _, r := range refs {
		all = append(all, r.ChunkID)
	}
	text := chunkTexts(t, d, all) // the legs' rows are partial: ids to texts
	q := storetest.Vector("night lighting")
	for _, limit := range []int{1, 2, 100} {
		rows, err := d.VectorCandidates(ctx, store.SearchParams{Viewer: store.Viewer{UserID: u.ID}, Vector: q, Model: storetest.Model,
			Limit: limit, ChunkIDs: all})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != len(texts) {
			t.Fatalf("limit %d: %d rows, want every chunk once (%d)", limit, len(rows), len(texts))
		}
		for _, r := range rows {
			// The stored vectors are half precision (about 3 significant digits).
			want := max(0, min(1, cosine(q, vecs[text[r.ID]])))
			if diff := r.Vector - want; diff > 2e-3 || diff < -2e-3 {
				t.Errorf("limit %d: %q vector score %.6f, want the cosine %.6f", limit, text[r.ID], r.Vector, want)
			}
		}
	}
}

// TestKeywordCandidatesCosines: given the query's vector, the keyword leg returns each row's
// cosine with it, the one VectorCandidates gives the same chunk (kb then needs no call for the
// keyword rows the index scan did not return); without a vector, none.
func TestKeywordCandidatesCosines(t *testing.T) {
	d := openVector(t)
	ctx := context.Background()
	u := storetest.NewUser(t, d, "")
	addChunks(t, d, u.ID, "night lighting with one lamp", "lighting a night shoot on a budget", "a hook in the first three seconds",
		"night scenes and their colour grading")
	v := store.Viewer{UserID: u.ID}
	q := storetest.Vector("night lighting")
	kw, err := d.KeywordCandidates(ctx, store.SearchParams{Viewer: v, Terms: storetest.Terms("night lighting"), Vector: q,
		Model: storetest.Model, Limit: 10})
	if err != nil || len(kw) != 3 {
		t.Fatalf("KeywordCandidates = %d rows, %v; want 3", len(kw), err)
	}
	ids := make([]string, len(kw))
	for i, r := range kw {
		ids[i] = r.ID
	}
	vc, err := d.VectorCandidates(ctx, store.SearchParams{Viewer: v, Vector: q, Model: storetest.Model, ChunkIDs: ids})
	if err != nil || len(vc) != len(ids) {
		t.Fatalf("VectorCandidates = %d rows, %v; want %d", len(vc), err, len(ids))
	}
	want := map[string]float64{}
	for _, r := range vc {
		want[r.ID] = r.Vector
	}
	for _, r := range kw {
		if !r.HasVector || r.Vector != want[r.ID] {
			t.Errorf("%q: cosine %v (set: %v), want VectorCandidates' %v", r.SearchText, r.Vector, r.HasVector, want[r.ID])
		}
	}
	kw, err = d.KeywordCandidates(ctx, store.SearchParams{Viewer: v, Terms: storetest.Terms("night lighting"), Limit: 10})
	if err != nil || len(kw) != 3 {
		t.Fatalf("KeywordCandidates without a vector = %d rows, %v; want 3", len(kw), err)
	}
	for _, r := range kw {
		if r.HasVector {
			t.Errorf("%q: a cosine without a query vector", r.SearchText)
		}
	}
}

// TestKeywordRowsOnce: past the keyword leg's row budget (keywordRows' stages), each matching row
// is a candidate once: a row holding the three rarest terms is the first stage's and no later
// one's. Twice, it took two of the candidates' places and was a hit twice in a search's results.
func TestKeywordRowsOnce(t *testing.T) {
	d := openVector(t)
	ctx := context.Background()
	u := storetest.NewUser(t, d, "")
	// Each of three terms in 1,200 chunks (half the corpus at most, and together over the budget),
	// 600 chunks holding all three.
	var texts []string
	for i := 0; i < 600; i++ {
		texts = append(texts, fmt.Sprintf("alpha beta gamma note %d", i), fmt.Sprintf("alpha only note %d", i),
			fmt.Sprintf("beta only note %d", i), fmt.Sprintf("gamma only note %d", i))
	}
	for i := 0; i < 1600; i++ {
		texts = append(texts, fmt.Sprintf("delta filler %d", i))
	}
	addChunks(t, d, u.ID, texts...)
	rows, err := d.KeywordCandidates(ctx, store.SearchParams{Viewer: store.Viewer{UserID: u.ID}, Terms: storetest.Terms("alpha beta gamma"),
		Limit: 2000})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	all3 := 0
	for _, r := range rows {
		if seen[r.ID] {
			t.Fatalf("%q is a candidate twice (%d rows)", r.SearchText, len(rows))
		}
		seen[r.ID] = true
		if strings.HasPrefix(r.SearchText, "alpha beta gamma") {
			all3++
		}
	}
	if len(rows) < 1000 || all3 != 600 {
		t.Errorf("%d candidates, %d of them holding the three terms; want the budget's rows, the 600 first", len(rows), all3)
	}
}

// TestKeywordScores: the keyword leg's score of each candidate is the idf-weighted sum of ts_rank
// per query term of the row's stored search_tsv, as computed from the column directly, in every
// stage of the row selection (the terms together are over the keyword budget) and for rows whose
// search_tsv is compressed (the leg ranks a decompressed copy of it).
func TestKeywordScores(t *testing.T) {
	d := openVector(t)
	ctx := context.Background()
	u := storetest.NewUser(t, d, "")
	var texts []string
	for i := 0; i < 300; i++ {
		texts = append(texts, fmt.Sprintf("alpha beta gamma alpha note %d", i), fmt.Sprintf("alpha only note %d", i),
			fmt.Sprintf("beta beta only note %d", i), fmt.Sprintf("gamma only note %d", i))
	}
	for i := 0; i < 400; i++ {
		texts = append(texts, fmt.Sprintf("delta filler %d", i))
	}
	for i := 0; i < 5; i++ { // search texts of over 2 KB: stored compressed
		var long strings.Builder
		for j := 0; j < 500; j++ {
			fmt.Fprintf(&long, "word%dx%d ", i, j)
		}
		texts = append(texts, long.String()+strings.Repeat("gamma ", i+1)+"beta")
	}
	addChunks(t, d, u.ID, texts...)
	terms := storetest.Terms("alpha beta gamma")
	rows, err := d.KeywordCandidates(ctx, store.SearchParams{Viewer: store.Viewer{UserID: u.ID}, Terms: terms, Limit: 2000})
	if err != nil {
		t.Fatal(err)
	}
	st, err := d.TermStats(ctx, terms)
	if err != nil {
		t.Fatal(err)
	}
	var idf []float64
	for _, term := range terms {
		df := float64(st.DF[term])
		idf = append(idf, math.Log(1+math.Max(0, float64(st.Docs)-df+0.5)/(df+0.5)))
	}
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	want := map[string]float64{}
	compressed := 0
	pgrows, err := d.Pool().Query(ctx, `SELECT id, pg_column_compression(search_tsv) IS NOT NULL,
			$2::float8 * ts_rank(search_tsv, to_tsquery('simple', $5)) + $3::float8 * ts_rank(search_tsv, to_tsquery('simple', $6))
			+ $4::float8 * ts_rank(search_tsv, to_tsquery('simple', $7))
		FROM knowledge_chunks WHERE id = ANY($1::text[])`, ids, idf[0], idf[1], idf[2], terms[0], terms[1], terms[2])
	if err != nil {
		t.Fatal(err)
	}
	for pgrows.Next() {
		var id string
		var packed bool
		var k float64
		if err := pgrows.Scan(&id, &packed, &k); err != nil {
			t.Fatal(err)
		}
		want[id] = k
		if packed {
			compressed++
		}
	}
	if err := pgrows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) < 1000 || compressed != 5 {
		t.Fatalf("%d candidates, %d of them compressed; want the budget's rows, the 5 long ones among them", len(rows), compressed)
	}
	for _, r := range rows {
		if math.Abs(r.Keyword-want[r.ID]) > 1e-9*want[r.ID] || want[r.ID] == 0 {
			t.Fatalf("keyword score of %s = %v, want %v", r.ID, r.Keyword, want[r.ID])
		}
	}
}

// chunkTexts returns the text of each chunk of ids (ChunksByID), by id.
func chunkTexts(t *testing.T, d store.Driver, ids []string) map[string]string {
	t.Helper()
	rows, err := d.ChunksByID(context.Background(), ids)
	if err != nil || len(rows) != len(ids) {
		t.Fatalf("ChunksByID = %d rows, %v; want %d", len(rows), err, len(ids))
	}
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		out[r.ID] = r.Text
	}
	return out
}

// cosine is the cosine similarity of a and b, not clamped (1 minus pgvector's cosine distance).
func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return dot / math.Sqrt(na*nb)
}

// TestNearestEmbeddings: on a small corpus the index scan returns the exact nearest chunks, in
// the same order as the sequential scan; without pgvector the call is not supported.
func TestNearestEmbeddings(t *testing.T) {
	d := openVector(t)
	ctx := context.Background()
	user := storetest.NewUser(t, d, "")
	addChunks(t, d, user.ID, "night lighting with one lamp", "a hook in the first three seconds", "captions for the intro")
	v := storetest.Vector("night lighting")
	approx, err := d.NearestEmbeddings(ctx, v, 2, false)
	if err != nil {
		t.Fatal(err)
	}
	exact, err := d.NearestEmbeddings(ctx, v, 2, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(exact) != 2 || !slices.Equal(approx, exact) {
		t.Fatalf("index scan %v, sequential scan %v; want the same 2 ids", approx, exact)
	}
	plain := openWith(t, false).(*pgstore.Driver)
	if _, err := plain.NearestEmbeddings(ctx, v, 2, true); !errors.Is(err, store.ErrNotSupported) {
		t.Fatalf("without pgvector: %v, want ErrNotSupported", err)
	}
}

// queryStrings runs a query of one text column and returns its values.
func queryStrings(t *testing.T, pool *pgxpool.Pool, q string, args ...any) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), q, args...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSearchTSV: the keyword index value the host writes (search_tsv, through WriteChunks' COPY)
// is exactly what to_tsvector('simple', search_text) gives, for the demo corpus and for texts at
// PostgreSQL's limits (a term past 255 occurrences, positions past 16383, many scripts); a row
// written without it, or whose search_text changes, gets it from the database.
func TestSearchTSV(t *testing.T) {
	d := openWith(t, false)
	ctx := context.Background()
	u := storetest.NewUser(t, d, "")
	texts := []string{"", "Night lighting: one lamp, 3 lamps and 12.5 lamps at 4K/60fps, twice twice twice",
		"短视频的开头三秒决定留存，開頭三秒決定留存 and the hook", "ภาษาไทยไม่มีช่องว่าง カタカナとひらがな 한국어 문장입니다 Русский текст Ελληνικά café naïve",
		strings.Repeat("哈", 600) + strings.Repeat(" lamp", 300),
		strings.Repeat("w ", 17000) + "late arrival",
		strings.Repeat("alpha beta gamma ", 6000)}
	docs, err := os.ReadDir("../../../testdata/kb-demo/docs")
	if err != nil || len(docs) == 0 {
		t.Fatalf("demo corpus: %v", err)
	}
	for _, f := range docs {
		b, err := os.ReadFile(filepath.Join("../../../testdata/kb-demo/docs", f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, string(b))
	}
	doc := addChunks(t, d, u.ID, texts...)[0]
	pool := d.(*pgstore.Driver).Pool()
	differ := func() []string {
		t.Helper()
		return queryStrings(t, pool, `SELECT left(chunk_text, 60) FROM knowledge_chunks
			WHERE search_tsv IS DISTINCT FROM to_tsvector('simple', search_text)`)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT COUNT(*) FROM knowledge_chunks WHERE search_tsv IS NOT NULL`).Scan(&n); err != nil || n != len(texts) {
		t.Fatalf("chunks with search_tsv = %d (%v), want %d", n, err, len(texts))
	}
	if bad := differ(); len(bad) > 0 {
		t.Errorf("search_tsv differs from to_tsvector for %q", bad)
	}
	// A writer that leaves the column out (an older host), and a change of search_text alone.
	if _, err := pool.Exec(ctx, `INSERT INTO knowledge_chunks (id, source_id, document_id, chunk_index, chunk_text, search_text, created_at)
		SELECT $1, source_id, document_id, 1000, 'x', 'zzolder qqhost wrote this', now() FROM knowledge_chunks WHERE document_id = $2 LIMIT 1`,
		uuid.NewString(), doc); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE knowledge_chunks SET search_text = 'zzchanged text' WHERE chunk_index = 1`); err != nil {
		t.Fatal(err)
	}
	if bad := differ(); len(bad) > 0 {
		t.Errorf("after an insert without search_tsv and an update of search_text, it differs for %q", bad)
	}
	var hits int
	if err := pool.QueryRow(ctx, `SELECT COUNT(*) FROM knowledge_chunks WHERE search_tsv @@ to_tsquery('simple', 'zzolder & qqhost')
		OR search_tsv @@ to_tsquery('simple', 'zzchanged')`).Scan(&hits); err != nil || hits != 2 {
		t.Errorf("rows found by the new terms = %d (%v), want 2", hits, err)
	}
}

// TestKeysStayInRow: a chunk row and an embedding row keep their identifiers in the row. Both
// rows are past the size at which PostgreSQL moves values out of line (the keyword index value
// and the vector are kept in the row), and it used to move the ids out after the text, so that
// every join and visibility check read the TOAST table. Any out-of-line value under 100 bytes
// is such an identifier. (An embedding row of the pgvector path has no out-of-line value at all:
// its halfvec is PLAIN and it has no float32 bytes.)
func TestKeysStayInRow(t *testing.T) {
	d := openVector(t)
	ctx := context.Background()
	u := storetest.NewUser(t, d, "")
	var texts []string
	for i := range 8 {
		var b strings.Builder
		for j := range 400 { // about 400 distinct terms: a keyword index value near 4 KB
			fmt.Fprintf(&b, "w%dx%d ", i, j)
		}
		texts = append(texts, b.String())
	}
	addChunks(t, d, u.ID, texts...)
	for _, table := range []string{"knowledge_chunks", "knowledge_embeddings"} {
		var toast string
		if err := d.Pool().QueryRow(ctx, `SELECT reltoastrelid::regclass::text FROM pg_class WHERE oid = $1::regclass`, table).Scan(&toast); err != nil {
			t.Fatal(err)
		}
		var small, all int
		if err := d.Pool().QueryRow(ctx, `SELECT COUNT(*) FILTER (WHERE n < 100), COUNT(*)
			FROM (SELECT SUM(length(chunk_data)) AS n FROM `+toast+` GROUP BY chunk_id) x`).Scan(&small, &all); err != nil {
			t.Fatal(err)
		}
		if small > 0 || (all == 0 && table == "knowledge_chunks") {
			t.Errorf("%s: %d of %d out-of-line values are identifiers (want 0 of some: the rows are past the size limit)", table, small, all)
		}
	}
}

// TestCandidateTermCounts: the candidate legs' rows carry what BM25 reads of a search text, the
// number of its terms and the frequencies of the query's (ChunkRow.TermFreq), the same as the
// text gives; a row whose keyword index value cannot tell them (a term past PostgreSQL's 255
// positions a lexeme, a chunk written without its term count) comes with its search text instead.
func TestCandidateTermCounts(t *testing.T) {
	d := openVector(t)
	ctx := context.Background()
	u := storetest.NewUser(t, d, "")
	res, err := d.AddDocument(ctx, store.NewSourceParams{CreatedBy: u.ID, Name: "s", Visibility: store.VisibilityPrivate},
		&store.KnowledgeDocument{ID: uuid.NewString(), UserID: u.ID, Title: "t", Filename: "f.txt", FileHash: uuid.NewString()})
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"night lighting with one lamp, lighting at night", "lighting a night shoot on a budget",
		strings.Repeat("night ", 300) + "lighting", "night lighting without a term count", "a hook in the first three seconds"}
	chunks := make([]store.KnowledgeChunk, len(texts))
	for i, tx := range texts {
		n := len(storetest.Terms(tx))
		if i == 3 {
			n = 0
		}
		chunks[i] = store.KnowledgeChunk{ID: uuid.NewString(), SourceID: res.Source.ID, DocumentID: res.Document.ID, Index: i,
			Text: tx, SearchText: storetest.SearchText(tx), TokenCount: n, EmbeddingModel: storetest.Model, Embedding: storetest.Vector(tx)}
	}
	if _, err := d.WriteChunks(ctx, store.WriteChunksParams{DocumentID: res.Document.ID, Chunks: chunks}); err != nil {
		t.Fatal(err)
	}
	terms := storetest.Terms("night lighting budget")
	v := store.Viewer{UserID: u.ID}
	p := store.SearchParams{Viewer: v, Terms: terms, Vector: storetest.Vector("night lighting"), Model: storetest.Model, Limit: 10}
	kw, err := d.KeywordCandidates(ctx, p)
	if err != nil || len(kw) != 4 {
		t.Fatalf("KeywordCandidates = %d rows, %v; want 4", len(kw), err)
	}
	vc, err := d.VectorCandidates(ctx, p)
	if err != nil || len(vc) != len(texts) {
		t.Fatalf("VectorCandidates = %d rows, %v; want %d", len(vc), err, len(texts))
	}
	byID := map[string]store.KnowledgeChunk{}
	for _, c := range chunks {
		byID[c.ID] = c
	}
	for leg, rows := range map[string][]store.ChunkRow{"keyword": kw, "vector": vc} {
		for _, r := range rows {
			c := byID[r.ID]
			fallback := c.Index == 2 || c.Index == 3
			if fallback {
				if r.TermFreq != nil || r.SearchText != c.SearchText {
					t.Errorf("%s leg, chunk %d: TermFreq %v, search text %.40q; want the search text", leg, c.Index, r.TermFreq, r.SearchText)
				}
				continue
			}
			words := strings.Fields(c.SearchText)
			want := map[string]int{}
			for _, w := range words {
				if slices.Contains(terms, w) {
					want[w]++
				}
			}
			if r.TermFreq == nil || r.TermCount != len(words) || fmt.Sprint(r.TermFreq) != fmt.Sprint(want) {
				t.Errorf("%s leg, chunk %d: %d terms, frequencies %v; want %d, %v", leg, c.Index, r.TermCount, r.TermFreq, len(words), want)
			}
		}
	}
}

// TestJobLeasesByDatabaseClock: a job's lease is set, renewed and read by the database's clock, so
// a host whose clock runs an hour late holds its jobs as long as one on time, and a host on time
// does not take them for abandoned (issue 38; run leases are tested in host/runs).
func TestJobLeasesByDatabaseClock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	late, onTime := lateAndOnTime(ctx, t)
	u := storetest.NewUser(t, late, "")
	r := &store.Run{ID: uuid.NewString(), WorkflowID: "voiceover_video", UserID: u.ID, Inputs: json.RawMessage(`{}`), UserContext: json.RawMessage(`{}`)}
	if err := late.CreateRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	j := &store.Job{ID: uuid.NewString(), RunID: r.ID, StepID: "render", Type: "videogen", Request: json.RawMessage(`{}`),
		TimeoutAt: time.Now().Add(time.Hour)}
	if err := late.CreateJob(ctx, j); err != nil {
		t.Fatal(err)
	}
	abandoned := func() bool {
		t.Helper()
		jobs, err := onTime.ListAbandonedJobs(ctx, onTime.Now(), 10)
		if err != nil {
			t.Fatal(err)
		}
		return len(jobs) == 1 && jobs[0].ID == j.ID
	}
	if err := late.MarkJobDispatched(ctx, store.DispatchJobParams{ID: j.ID, Holder: "late/life", Lease: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if abandoned() {
		t.Errorf("a job dispatched for a minute by a host an hour late is abandoned at once for a host on time")
	}
	if _, err := late.RenewJobLeases(ctx, "late/life", time.Minute); err != nil {
		t.Fatal(err)
	}
	if abandoned() {
		t.Errorf("a job renewed for a minute by a host an hour late is abandoned at once for a host on time")
	}
	if _, err := late.TakeBackJobs(ctx, "late"); err != nil {
		t.Fatal(err)
	}
	if !abandoned() {
		t.Errorf("a job taken back by its host (an hour late) is not abandoned for a host on time")
	}
}

// lateAndOnTime opens two stores on one new schema: one whose clock runs an hour late, one on time.
func lateAndOnTime(ctx context.Context, t *testing.T) (late, onTime *pgstore.Driver) {
	t.Helper()
	url := storetest.PostgresURL(t)
	schema := storetest.SchemaName()
	late, err := pgstore.Open(ctx, url, pgstore.Options{Schema: schema, Clock: func() time.Time { return time.Now().Add(-time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		late.Close()
		storetest.DropSchema(url, schema)
	})
	onTime, err = pgstore.Open(ctx, url, pgstore.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { onTime.Close() })
	return late, onTime
}

// TestIngestAndOutboxLeasesByDatabaseClock: documents' and outbox events' leases by the
// database's clock, for two stores on one schema, one an hour late (storetest).
func TestIngestAndOutboxLeasesByDatabaseClock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	late, onTime := lateAndOnTime(ctx, t)
	storetest.LeasesByDatabaseClock(t, late, onTime)
}
