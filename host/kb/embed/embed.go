// Package embed turns texts into vectors: the Embedder interface, the Local hashing embedder that
// needs no network, and Client for OpenAI-compatible /embeddings servers.
package embed

import (
	"context"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/reelforge/reelforge/host/kb/segment"
)

// Embedder maps texts to vectors of Dimensions() numbers, one per text, in order.
type Embedder interface {
	Model() string
	Dimensions() int
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// LocalModel is the model name stored with vectors made by Local.
const LocalModel = "local-hash-1536-v1"

// LocalDimensions is the vector size of Local (the vector column's dimension).
const LocalDimensions = 1536

// Local is a deterministic embedder built on package segment: feature hashing of the same terms
// the keyword index uses, plus light-stemmed words, word bigrams and Chinese character unigrams,
// with sublinear term frequency, a fixed weight per feature kind (longer words weigh more),
// signed hashing into four of 1536 dimensions and L2 normalisation. Texts sharing no feature have cosine
// close to 0 (see rank.Floor). It is safe for concurrent use.
type Local struct{ t Tuning }

// Tuning holds the feature weights of Local; the zero value of a field takes its default. It
// exists for benchmarks: vectors made with other weights are not comparable with LocalModel's.
type Tuning struct {
	Bigram    float64 // word bigram weight, default 0.45
	CJKUni    float64 // Chinese unigram weight, default 0.35
	CJKBigram float64 // Chinese bigram weight, default 1
	Common    float64 // weight of common English words (question words, auxiliaries), default 0.3
}

// DefaultTuning is the tuning of LocalModel.
var DefaultTuning = Tuning{Bigram: 0.45, CJKUni: 0.35, CJKBigram: 1, Common: 0.3}

// NewLocal returns the local embedder.
func NewLocal() *Local { return &Local{t: DefaultTuning} }

// NewLocalTuned returns a local embedder with other weights (benchmarks only).
func NewLocalTuned(t Tuning) *Local {
	d := DefaultTuning
	if t.Bigram == 0 {
		t.Bigram = d.Bigram
	}
	if t.CJKUni == 0 {
		t.CJKUni = d.CJKUni
	}
	if t.CJKBigram == 0 {
		t.CJKBigram = d.CJKBigram
	}
	if t.Common == 0 {
		t.Common = d.Common
	}
	return &Local{t: t}
}

// Model returns LocalModel.
func (*Local) Model() string { return LocalModel }

// Dimensions returns 1536.
func (*Local) Dimensions() int { return LocalDimensions }

// Embed returns one unit vector per text (all zeros for a text without terms).
func (l *Local) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if i%64 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		out[i] = l.Vector(t)
	}
	return out, nil
}

// Vector embeds one text.
func (l *Local) Vector(text string) []float32 {
	feats := l.features(text)
	v := make([]float32, LocalDimensions)
	for _, f := range feats {
		// Each feature goes to four signed buckets (11 bits of index and a sign bit each, from one
		// 64-bit hash), so a single hash collision moves a cosine by at most a quarter.
		h, w := fnv64(f.Key), float32(f.Weight)
		for k := 0; k < 4; k++ {
			x := h >> (12 * k)
			idx := (x & 0x7ff) % LocalDimensions
			if x&0x800 != 0 {
				v[idx] -= w
			} else {
				v[idx] += w
			}
		}
	}
	normalize(v)
	return v
}

func normalize(v []float32) {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return
	}
	inv := float32(1 / math.Sqrt(s))
	for i := range v {
		v[i] *= inv
	}
}

func fnv64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	// Final avalanche so that the low bits (the index) and the top bit (the sign) are independent.
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// Features returns the weighted features of text in first-seen order (before hashing): the fixed weight of the
// feature kind times the sublinear term frequency 1+ln(tf).
func (l *Local) Features(text string) []Feature { return l.features(text) }

func (l *Local) features(text string) []Feature {
	t := l.t
	toks := segment.Tokens(text)
	type fw struct {
		w float64
		n int
	}
	m := make(map[string]fw, len(toks)*2)
	var order []string
	add := func(f string, w float64) {
		x, ok := m[f]
		if !ok {
			order = append(order, f)
		}
		x.w, x.n = w, x.n+1
		m[f] = x
	}
	prev := ""
	for _, tok := range toks {
		if tok.Stop {
			continue
		}
		if tok.CJK {
			if tok.Uni || utf8.RuneCountInString(tok.Text) == 1 {
				if commonHan[tok.Text] {
					continue
				}
				add("u"+tok.Text, t.CJKUni)
			} else {
				add("c"+tok.Text, t.CJKBigram)
			}
			prev = ""
			continue
		}
		w := stem(tok.Text)
		if common[w] {
			add("w"+w, t.Common)
			prev = ""
			continue
		}
		add("w"+w, wordWeight(w))
		if prev != "" {
			add("b"+prev+" "+w, t.Bigram)
		}
		prev = w
	}
	out := make([]Feature, len(order))
	for i, f := range order {
		x := m[f]
		out[i] = Feature{f, x.w * (1 + math.Log(float64(x.n)))}
	}
	return out
}

// Feature is one weighted feature of a text.
type Feature struct {
	Key    string
	Weight float64
}

// common are frequent English words beyond segment's stop words (question words, auxiliaries,
// pronouns): a fixed low IDF-like weight, and no bigrams through them.
var common = map[string]bool{}

func init() {
	for _, w := range strings.Fields("what which who whom whose when where why how did do does done has have had " +
		"were been being from its his her he she him they them we you your our can could would should may might " +
		"must shall about than also other more most some any only one two after before during over under up out " +
		"so all each many much very same own both few i me my name named called year") {
		common[w] = true
	}
}

// commonHan are frequent Chinese function characters (particles, question words), whose unigrams
// carry no topic.
var commonHan = map[string]bool{}

func init() {
	for _, r := range "的了是在和與与及其之也被由為为有於于哪什麼么誰谁何個个一這这那中年時时多少幾几而並并或" {
		commonHan[string(r)] = true
	}
}

// wordWeight is a fixed IDF-like weight: short words and bare numbers are common, long words rare.
func wordWeight(w string) float64 {
	n := utf8.RuneCountInString(w)
	switch {
	case n <= 2:
		return 0.5
	case n == 3:
		return 0.75
	case n <= 5:
		return 1.0
	default:
		return 1.2
	}
}

// stem is a light English suffix stripper (plural s, -es, -ies, -ed, -ing) applied to ASCII words
// of five letters or more, so "rules" and "rule", "studies" and "study" share a feature.
func stem(w string) string {
	if len(w) < 5 || !isASCIIWord(w) {
		return w
	}
	switch {
	case strings.HasSuffix(w, "ies"):
		return w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "sses"):
		return w[:len(w)-2]
	case strings.HasSuffix(w, "ss") || strings.HasSuffix(w, "us") || strings.HasSuffix(w, "is"):
		return w
	case strings.HasSuffix(w, "s"):
		return w[:len(w)-1]
	case strings.HasSuffix(w, "ing") && len(w) >= 6:
		return w[:len(w)-3]
	case strings.HasSuffix(w, "ed") && len(w) >= 6:
		return w[:len(w)-2]
	}
	return w
}

func isASCIIWord(w string) bool {
	for i := 0; i < len(w); i++ {
		if c := w[i]; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}
