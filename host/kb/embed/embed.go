// Package embed turns texts into vectors: the Embedder interface, the Local hashing embedder that
// needs no network, and Client for OpenAI-compatible /embeddings servers.
package embed

import (
	"context"
	"math"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/reelforge/reelforge/internal/segment"
)

// Embedder maps texts to vectors of Dimensions() numbers, one per text, in order.
type Embedder interface {
	Model() string
	Dimensions() int
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// Semantic reports whether e's vectors carry meaning beyond the words a text shares with
// another (a trained embedding model), as opposed to hashing those words (Local). The ranking
// fuses a semantic embedder's leg by weight; a non-semantic one may only add hits to the keyword
// leg's (package rank). An embedder says which it is with a Semantic() bool method; one without
// it is taken as semantic.
func Semantic(e Embedder) bool {
	if s, ok := e.(interface{ Semantic() bool }); ok {
		return s.Semantic()
	}
	return true
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

// Semantic returns false: Local hashes the words of a text, it knows no synonyms.
func (*Local) Semantic() bool { return false }

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
func (l *Local) Vector(text string) []float32 { return l.VectorOf(segment.Tokens(text)) }

// VectorOf embeds a text from its segment.Tokens, so a caller that also needs the terms (the
// keyword index) segments the text once. Features are hashed in place instead of being built as
// strings, which keeps the embedder free of per-feature allocations; the result is the same as
// hashing the features of the plainly written reference in order (referenceFeatures, in
// reference_test.go).
func (l *Local) VectorOf(toks []segment.Token) []float32 {
	fs := featPool.Get().(*featSet)
	fs.reset()
	l.collect(fs, toks)
	v := make([]float32, LocalDimensions)
	for _, f := range fs.list {
		w := f.w // 1+ln(1) is exactly 1: most features occur once, and skip the logarithm
		if f.n > 1 {
			w *= 1 + math.Log(float64(f.n))
		}
		scatter(v, f.h, float32(w))
	}
	normalize(v)
	featPool.Put(fs)
	return v
}

// scatter adds w to the four signed buckets of hash h. Each feature goes to four signed buckets
// (11 bits of index and a sign bit each, from one 64-bit hash), so a single hash collision moves
// a cosine by at most a quarter.
func scatter(v []float32, h uint64, w float32) {
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

// featSet counts the features of one text by hash, in first-seen order (the order the buckets
// are summed in, which float32 rounding makes part of the result). Two distinct features with
// the same 64-bit hash would count as one; at a few hundred features a text that is negligible.
type featSet struct {
	idx  map[uint64]int32
	list []featCount
	word []byte // the current stemmed word
	prev []byte // the previous stemmed word, for bigrams
}

type featCount struct {
	h uint64
	w float64
	n int
}

var featPool = sync.Pool{New: func() any { return &featSet{idx: make(map[uint64]int32, 512)} }}

func (fs *featSet) reset() {
	clear(fs.idx)
	fs.list = fs.list[:0]
}

func (fs *featSet) add(h uint64, w float64) {
	if i, ok := fs.idx[h]; ok {
		fs.list[i].w, fs.list[i].n = w, fs.list[i].n+1
		return
	}
	fs.idx[h] = int32(len(fs.list))
	fs.list = append(fs.list, featCount{h, w, 1})
}

// collect is features without strings: the same features, weights and order.
func (l *Local) collect(fs *featSet, toks []segment.Token) {
	t := l.t
	hasPrev := false
	for _, tok := range toks {
		if tok.Stop {
			continue
		}
		if tok.CJK {
			if tok.Uni || utf8.RuneCountInString(tok.Text) == 1 {
				if commonHan[tok.Text] {
					continue
				}
				fs.add(fnvDone(fnvString(fnvByte(fnvInit, 'u'), tok.Text)), t.CJKUni)
			} else {
				fs.add(fnvDone(fnvString(fnvByte(fnvInit, 'c'), tok.Text)), t.CJKBigram)
			}
			hasPrev = false
			continue
		}
		fs.word = stemAppend(fs.word[:0], tok.Text)
		w := fs.word
		hw := fnvBytes(fnvByte(fnvInit, 'w'), w)
		if common[string(w)] {
			fs.add(fnvDone(hw), t.Common)
			hasPrev = false
			continue
		}
		fs.add(fnvDone(hw), wordWeight(utf8.RuneCount(w)))
		if hasPrev {
			h := fnvBytes(fnvByte(fnvInit, 'b'), fs.prev)
			fs.add(fnvDone(fnvBytes(fnvByte(h, ' '), w)), t.Bigram)
		}
		fs.prev = append(fs.prev[:0], w...)
		hasPrev = true
	}
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

// fnv64 is FNV-1a with a final avalanche; the fnv helpers below compute the same hash of a
// concatenation without building it.
func fnv64(s string) uint64 { return fnvDone(fnvString(fnvInit, s)) }

const fnvInit = uint64(14695981039346656037)

func fnvByte(h uint64, c byte) uint64 {
	h ^= uint64(c)
	return h * 1099511628211
}

func fnvString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

func fnvBytes(h uint64, b []byte) uint64 {
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

// fnvDone is the final avalanche, so that the low bits (the index) and the top bit (the sign)
// are independent.
func fnvDone(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
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

// wordWeight is the weight of a word of n runes, a fixed IDF-like weight: short words and bare
// numbers are common, long words rare.
func wordWeight(n int) float64 {
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

// stemAppend appends the stem of w to b: a light English suffix stripper (plural s, -es, -ies,
// -ed, -ing) applied to ASCII words of five letters or more, so "rules" and "rule", "studies"
// and "study" share a feature.
func stemAppend(b []byte, w string) []byte {
	if len(w) < 5 || !isASCIIWord(w) {
		return append(b, w...)
	}
	switch {
	case strings.HasSuffix(w, "ies"):
		return append(append(b, w[:len(w)-3]...), 'y')
	case strings.HasSuffix(w, "sses"):
		return append(b, w[:len(w)-2]...)
	case strings.HasSuffix(w, "ss") || strings.HasSuffix(w, "us") || strings.HasSuffix(w, "is"):
		return append(b, w...)
	case strings.HasSuffix(w, "s"):
		return append(b, w[:len(w)-1]...)
	case strings.HasSuffix(w, "ing") && len(w) >= 6:
		return append(b, w[:len(w)-3]...)
	case strings.HasSuffix(w, "ed") && len(w) >= 6:
		return append(b, w[:len(w)-2]...)
	}
	return append(b, w...)
}

func isASCIIWord(w string) bool {
	for i := 0; i < len(w); i++ {
		if c := w[i]; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}
