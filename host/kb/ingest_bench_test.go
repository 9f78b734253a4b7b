package kb_test

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reelforge/reelforge/host/kb"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/sqlitestore"
)

// benchText is a synthetic document like the bench command's: paragraphs of about 900
// characters of Zipf-distributed pseudo-words and Chinese two-character words.
func benchText(r *rand.Rand, paras int) string {
	syl := strings.Fields("ka lo mi ne ru sa to vi de fo ga hu ji be pa ri so te zu wa ny cho pre str")
	han := []rune("视频创作者观众平台开头脚本镜头灯光声音字幕趋势留存故事剪辑节奏颜色音乐品牌画面封面评论互动推荐直播转化")
	words := make([]string, 4000)
	for i := range words {
		if i%4 == 3 {
			words[i] = string([]rune{han[r.IntN(len(han))], han[r.IntN(len(han))]})
			continue
		}
		var b strings.Builder
		for k := 0; k < 2+r.IntN(3); k++ {
			b.WriteString(syl[r.IntN(len(syl))])
		}
		words[i] = b.String()
	}
	z := rand.NewZipf(r, 1.1, 2, uint64(len(words)-1))
	var b strings.Builder
	for p := 0; p < paras; p++ {
		for n := 0; n < 900; {
			w := words[z.Uint64()]
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
	texts := make([]string, 64)
	for i := range texts {
		texts[i] = benchText(r, 10)
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
