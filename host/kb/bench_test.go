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
)

// benchVocab is a synthetic vocabulary like the bench command's: pseudo-words and Chinese
// two-character words drawn with a Zipf distribution, so a few are common and most are rare.
type benchVocab struct {
	words []string
	zipf  *rand.Zipf
}

func newBenchVocab(r *rand.Rand) *benchVocab {
	syl := strings.Fields("ka lo mi ne ru sa to vi de fo ga hu ji be pa ri so te zu wa ny cho pre str")
	han := []rune("视频创作者观众平台开头脚本镜头灯光声音字幕趋势留存故事剪辑节奏颜色音乐品牌画面封面评论互动推荐直播转化")
	v := &benchVocab{words: make([]string, 8000)}
	for i := range v.words {
		if i%4 == 3 {
			v.words[i] = string([]rune{han[r.IntN(len(han))], han[r.IntN(len(han))]})
			continue
		}
		var b strings.Builder
		for k := 0; k < 2+r.IntN(3); k++ {
			b.WriteString(syl[r.IntN(len(syl))])
		}
		v.words[i] = b.String()
	}
	v.zipf = rand.NewZipf(r, 1.1, 2, uint64(len(v.words)-1))
	return v
}

func (v *benchVocab) word() string { return v.words[v.zipf.Uint64()] }

// text is a document of paras paragraphs of about 900 characters.
func (v *benchVocab) text(paras int) string {
	var b strings.Builder
	for p := 0; p < paras; p++ {
		for n := 0; n < 900; {
			w := v.word()
			n += len([]rune(w)) + 1
			b.WriteString(w)
			b.WriteByte(' ')
		}
		b.WriteString("\n\n")
	}
	return b.String()
}

// BenchmarkIngestSQLite is the whole ingest path (segment, chunk, local embedder, one SQLite
// transaction) for 9 KB documents, the size the bench command uses.
func BenchmarkIngestSQLite(b *testing.B) {
	ctx := context.Background()
	d, err := sqlitestore.Open(ctx, filepath.Join(b.TempDir(), "kb.db"), sqlitestore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	s := kb.New(d, kb.Options{})
	r := rand.New(rand.NewPCG(1, 2))
	v := newBenchVocab(r)
	texts := make([]string, 64)
	for i := range texts {
		texts[i] = v.text(10)
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
// file and reused by later runs.
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
	s := kb.New(d, kb.Options{})
	v := newBenchVocab(rand.New(rand.NewPCG(1, 2)))
	_, have, err := d.ListDocuments(ctx, store.Viewer{UserID: "u"}, 1, 0)
	if err != nil {
		b.Fatal(err)
	}
	for chunks := have * 10; chunks < size; {
		res, err := s.Ingest(ctx, kb.IngestParams{UserID: "u", SourceName: "bench", Visibility: store.VisibilityPrivate, Text: v.text(10)})
		if err != nil {
			b.Fatal(err)
		}
		chunks += res.ChunksCount
	}
	queries := make([]string, 256)
	for i := range queries {
		queries[i] = v.word() + " " + v.word() + " " + v.word()
	}
	i := 0
	for b.Loop() {
		if _, err := s.Search(ctx, kb.SearchParams{UserID: "u", Query: queries[i%len(queries)], TopK: 5}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
