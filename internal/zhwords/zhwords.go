// Package zhwords finds where Chinese words end, so that a caption's line never breaks inside
// one ("流程一|旦固定" is a break inside 一旦). Chinese is written without spaces, and the Unicode
// line-breaking rules allow a break between any two Han characters; this package says which of
// those breaks fall between words.
//
// It segments a run of Han characters as jieba does without its HMM: of all the ways to cut the
// run into dictionary words (a character alone always counts as one), the one whose words' joint
// probability is highest. The dictionary, words.txt, is jieba's cut to every single character and
// the 80,000 commonest words of two to four characters (1 MB; the whole is 5 MB, and a segmenter
// module such as go-ego/gse adds tens of MB and a second of loading to every plugin). A word it
// lacks is seen as single characters, so a break inside a rare word is still possible, but the
// common words a script is made of stay whole. `go generate` writes words.txt from Debian's
// python3-jieba (gen.py).
package zhwords

import (
	_ "embed"
	"math"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

//go:generate python3 gen.py

//go:embed words.txt
var wordsTxt string

// dict is the parsed dictionary: each word's log probability, and the longest word in runes.
type dict struct {
	logp    map[string]float64
	unknown float64 // the log probability of a character the dictionary lacks
	longest int
}

var load = sync.OnceValue(func() *dict {
	d := &dict{logp: map[string]float64{}}
	lines := strings.Split(strings.TrimSpace(wordsTxt), "\n")
	total, _ := strconv.ParseFloat(lines[0], 64)
	logTotal := math.Log(total)
	for _, l := range lines[1:] {
		w, f, _ := strings.Cut(l, " ")
		n, _ := strconv.ParseFloat(f, 64)
		d.logp[w] = math.Log(n) - logTotal
		d.longest = max(d.longest, utf8.RuneCountInString(w))
	}
	d.unknown = -logTotal // a count of 1
	return d
})

// Inside reports, for each byte offset of text, whether it falls between two Han characters of
// one word: a line must not break there. Offsets elsewhere (between words, around Latin text,
// punctuation or spaces) are false. It is safe for concurrent use.
func Inside(text string) map[int]bool {
	out := map[int]bool{}
	start := -1
	flush := func(end int) {
		if start >= 0 {
			segmentRun(text[start:end], start, out)
		}
		start = -1
	}
	for i, r := range text {
		if unicode.Is(unicode.Han, r) {
			if start < 0 {
				start = i
			}
		} else {
			flush(i)
		}
	}
	flush(len(text))
	return out
}

// Words splits a run of Han characters into its most probable words (used by the tests and to
// read what Inside does).
func Words(run string) []string {
	var out []string
	ends := cut(run)
	from := 0
	for _, e := range ends {
		out = append(out, run[from:e])
		from = e
	}
	return out
}

// segmentRun marks the offsets inside the words of run (a run of Han characters starting at byte
// base of the text).
func segmentRun(run string, base int, out map[int]bool) {
	from := 0
	for _, e := range cut(run) {
		for i := range run[from:e] {
			if i > 0 {
				out[base+from+i] = true
			}
		}
		from = e
	}
}

// cut returns the byte ends of run's words in the most probable segmentation (dynamic
// programming from the end, as jieba's calc).
func cut(run string) []int {
	d := load()
	var at []int // byte offset of each rune
	for i := range run {
		at = append(at, i)
	}
	n := len(at)
	at = append(at, len(run))
	best := make([]float64, n+1) // best[i]: the log probability of run's runes i: cut best
	next := make([]int, n+1)     // next[i]: the rune where the word starting at i ends
	for i := n - 1; i >= 0; i-- {
		best[i], next[i] = d.unknown+best[i+1], i+1
		if p, ok := d.logp[run[at[i]:at[i+1]]]; ok {
			best[i] = p + best[i+1]
		}
		for j := i + 2; j <= min(n, i+d.longest); j++ {
			if p, ok := d.logp[run[at[i]:at[j]]]; ok && p+best[j] > best[i] {
				best[i], next[i] = p+best[j], j
			}
		}
	}
	var ends []int
	for i := 0; i < n; i = next[i] {
		ends = append(ends, at[next[i]])
	}
	return ends
}
