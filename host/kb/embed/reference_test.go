package embed

import (
	"math"
	"unicode/utf8"

	"github.com/reelforge/reelforge/internal/segment"
)

// referenceFeatures is the embedder's feature extraction written plainly, with strings: the
// weighted features of text in first-seen order (before hashing), the fixed weight of the feature
// kind times the sublinear term frequency 1+ln(tf). Local.collect must give the same features,
// hashed in place (FuzzVectorMatchesReference).
func referenceFeatures(l *Local, text string) []feature {
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
		add("w"+w, wordWeight(utf8.RuneCountInString(w)))
		if prev != "" {
			add("b"+prev+" "+w, t.Bigram)
		}
		prev = w
	}
	out := make([]feature, len(order))
	for i, f := range order {
		x := m[f]
		out[i] = feature{f, x.w * (1 + math.Log(float64(x.n)))}
	}
	return out
}

// feature is one weighted feature of a text.
type feature struct {
	Key    string
	Weight float64
}

// stem is stemAppend on a string.
func stem(w string) string { return string(stemAppend(nil, w)) }
