// Package textgen writes synthetic text for tests and benchmarks: a fixed seed gives the same
// corpus every run.
package textgen

import (
	"math/rand/v2"
	"strings"
)

// Vocab is the synthetic vocabulary of the knowledge tests and benchmarks (make bench and the kb package's
// Go benchmarks): pseudo-words from syllables and Chinese two-character words, drawn with a Zipf
// distribution (s = 1.1) so a few words are common and most are rare, as in real text.
type Vocab struct {
	words []string
	zipf  *rand.Zipf
}

// NewVocab builds the vocabulary from r (a fixed seed gives the same corpus every run).
func NewVocab(r *rand.Rand) *Vocab {
	syl := strings.Fields("ka lo mi ne ru sa to vi de fo ga hu ji be pa ri so te zu wa ny cho pre str")
	han := []rune("视频创作者观众平台开头脚本镜头灯光声音字幕趋势留存故事剪辑节奏颜色音乐品牌画面封面评论互动推荐直播转化选题话术数据增长预算发布复盘")
	v := &Vocab{}
	for i := 0; i < 8000; i++ {
		if i%4 == 3 {
			v.words = append(v.words, string([]rune{han[r.IntN(len(han))], han[r.IntN(len(han))]}))
			continue
		}
		var b strings.Builder
		for k := 0; k < 2+r.IntN(3); k++ {
			b.WriteString(syl[r.IntN(len(syl))])
		}
		v.words = append(v.words, b.String())
	}
	v.zipf = rand.NewZipf(r, 1.1, 2, uint64(len(v.words)-1))
	return v
}

// Word draws one word.
func (v *Vocab) Word() string { return v.words[v.zipf.Uint64()] }

// Text is a synthetic document of paras paragraphs of about 900 characters.
func (v *Vocab) Text(paras int) string {
	var b strings.Builder
	for p := 0; p < paras; p++ {
		n := 0
		for n < 900 {
			w := v.Word()
			n += len([]rune(w)) + 1
			b.WriteString(w)
			b.WriteByte(' ')
		}
		b.WriteString("\n\n")
	}
	return b.String()
}
