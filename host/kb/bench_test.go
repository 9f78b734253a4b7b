package kb_test

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/reelforge/reelforge/host/kb"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/sqlitestore"
	"github.com/reelforge/reelforge/internal/textgen"
)

// sqliteService is a knowledge service over a new SQLite store in b's temporary folder, closed
// when b ends.
func sqliteService(b *testing.B) *kb.Service {
	d, err := sqlitestore.Open(context.Background(), filepath.Join(b.TempDir(), "kb.db"), sqlitestore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	return kb.New(d, kb.Options{})
}

// BenchmarkIngestSQLite is the whole ingest path (segment, chunk, local embedder, one SQLite
// transaction) for 9 KB documents, the size the bench command uses.
func BenchmarkIngestSQLite(b *testing.B) {
	ctx := context.Background()
	s := sqliteService(b)
	r := rand.New(rand.NewPCG(1, 2))
	v := textgen.NewVocab(r)
	texts := make([]string, 64)
	for i := range texts {
		texts[i] = v.Text(10)
	}
	var n int64
	i := 0
	b.ResetTimer()
	for b.Loop() {
		// A counter keeps every text new, so no ingest is a duplicate.
		text := texts[i%len(texts)] + strings.Repeat("x", i/len(texts))
		i++
		n += int64(len(text))
		if _, err := s.Ingest(ctx, kb.IngestParams{UserID: "u", SourceName: "bench", Visibility: store.VisibilityPrivate, Text: text}); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(n / int64(max(1, i)))
}

// BenchmarkSearchSQLite is one search (3 Zipf words, top 5) over a corpus of KB_BENCH_CHUNKS
// chunks (default 2000) of the same synthetic text. With KB_BENCH_DB the corpus is kept in that
// file and reused by later runs. KB_BENCH_VECTOR_CACHE_MB sets kb.Options.VectorCacheMB (-1: no
// vector cache, what the cache saves).
func BenchmarkSearchSQLite(b *testing.B) {
	ctx := context.Background()
	size := 2000
	if n, err := strconv.Atoi(os.Getenv("KB_BENCH_CHUNKS")); err == nil && n > 0 {
		size = n
	}
	path := os.Getenv("KB_BENCH_DB")
	if path == "" {
		path = filepath.Join(b.TempDir(), "kb.db")
	}
	d, err := sqlitestore.Open(ctx, path, sqlitestore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	cacheMB, _ := strconv.Atoi(os.Getenv("KB_BENCH_VECTOR_CACHE_MB"))
	s := kb.New(d, kb.Options{VectorCacheMB: cacheMB})
	v := textgen.NewVocab(rand.New(rand.NewPCG(1, 2)))
	_, have, err := d.ListDocuments(ctx, store.ListKnowledgeParams{Viewer: store.Viewer{UserID: "u"}, Limit: 1})
	if err != nil {
		b.Fatal(err)
	}
	for chunks := have * 10; chunks < size; {
		res, err := s.Ingest(ctx, kb.IngestParams{UserID: "u", SourceName: "bench", Visibility: store.VisibilityPrivate, Text: v.Text(10)})
		if err != nil {
			b.Fatal(err)
		}
		chunks += res.ChunksCount
	}
	queries := make([]string, 256)
	for i := range queries {
		queries[i] = v.Word() + " " + v.Word() + " " + v.Word()
	}
	i := 0
	for b.Loop() {
		if _, err := s.Search(ctx, kb.SearchParams{UserID: "u", Query: queries[i%len(queries)], TopK: 5}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkIngestBatchSQLite is the batch/text route's path without HTTP: kb.IngestBatch of 50
// documents of 300 to 3,000 characters a call (the bench's HTTP case, issue 24), on SQLite.
func BenchmarkIngestBatchSQLite(b *testing.B) {
	ctx := context.Background()
	s := sqliteService(b)
	r := rand.New(rand.NewPCG(5, 6))
	v := textgen.NewVocab(r)
	var n int64
	calls := 0
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		items := make([]kb.IngestParams, 50)
		for i := range items {
			var sb strings.Builder
			for want := 300 + r.IntN(2701); sb.Len() < want; {
				sb.WriteString(v.Word())
				sb.WriteByte(' ')
				if r.IntN(12) == 0 {
					sb.WriteString(". ")
				}
			}
			items[i] = kb.IngestParams{UserID: "u", SourceName: "bench", Visibility: store.VisibilityPrivate, Text: sb.String()}
			n += int64(sb.Len())
		}
		calls++
		b.StartTimer()
		for _, o := range s.IngestBatch(ctx, items) {
			if o.Err != nil {
				b.Fatal(o.Err)
			}
		}
	}
	b.SetBytes(n / int64(max(1, calls)))
}
