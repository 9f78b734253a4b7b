// Package segment is the one text segmentation of the knowledge base, shared by the keyword index,
// queries and the local embedder.
//
// Text is normalised with Unicode NFKC and case folding, and diacritics are removed. Runs of
// letters and digits in space-separated scripts (Latin, Cyrillic, Greek, Hangul, ...) are words;
// runs of Han, Kana and Thai characters, which are written without spaces, become their character
// unigrams and overlapping bigrams, so a two-character Chinese word inside a sentence is found. Terms never contain punctuation or spaces, so the keyword index can
// store IndexForm (terms joined by spaces) and SQLite FTS5's unicode61 tokenizer and PostgreSQL's
// to_tsvector('simple', ...) both read back exactly the same terms.
package segment

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// MaxTermRunes is the longest term kept; longer runs of letters (hashes, base64) are dropped.
const MaxTermRunes = 40

// stop is a small English stop-word list, dropped from scoring terms.
var stop = map[string]bool{}

func init() {
	for _, w := range strings.Fields("a an and are as at be but by for if in into is it no not of on or " +
		"such that the their then there these they this to was will with") {
		stop[w] = true
	}
}

// IsStopWord reports whether w (already normalised) is on the English stop-word list.
func IsStopWord(w string) bool { return stop[w] }

var folders = sync.Pool{New: func() any { c := cases.Fold(); return &c }}

// Normalize returns text in NFKC, case-folded, without diacritics (combining marks removed from
// letters of space-separated scripts).
func Normalize(text string) string {
	s := norm.NFKC.String(text)
	if isASCII(s) {
		return asciiLower(s)
	}
	s, other := foldCase(s)
	if other && hasMark(s) {
		s = stripMarks(s)
	}
	return s
}

// foldCase case-folds s. ASCII letters are lowered and CJK unified ideographs (which have no case
// and no marks) copied in place; only the runs of other characters go through the Unicode case
// folder, whose per-character cost was most of Normalize on mixed Chinese and English text. Case
// folding maps each character on its own, so folding the runs apart gives the same text
// (FuzzNormalize checks it against folding the whole). other reports whether s holds characters
// that are neither ASCII nor CJK unified, the only ones that may carry marks.
func foldCase(s string) (folded string, other bool) {
	var b []byte
	var c *cases.Caser
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r < utf8.RuneSelf || isCJKUnified(r) {
			if b != nil {
				if r >= 'A' && r <= 'Z' {
					r += 'a' - 'A'
				}
				b = utf8.AppendRune(b, r)
			} else if r >= 'A' && r <= 'Z' {
				b = append(make([]byte, 0, len(s)+8), s[:i]...)
				b = append(b, byte(r+'a'-'A'))
			}
			i += n
			continue
		}
		j := i + n
		for j < len(s) {
			r2, n2 := utf8.DecodeRuneInString(s[j:])
			if r2 < utf8.RuneSelf || isCJKUnified(r2) {
				break
			}
			j += n2
		}
		if c == nil {
			c = folders.Get().(*cases.Caser)
			defer folders.Put(c)
		}
		run := c.String(s[i:j])
		c.Reset()
		other = true
		if b == nil && run != s[i:j] {
			b = append(make([]byte, 0, len(s)+8), s[:i]...)
		}
		if b != nil {
			b = append(b, run...)
		}
		i = j
	}
	if b == nil {
		return s, other
	}
	return string(b), other
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if c := b[j]; c >= 'A' && c <= 'Z' {
					b[j] = c + 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

func hasMark(s string) bool {
	if !norm.NFD.IsNormalString(s) {
		return true // something decomposes, e.g. a precomposed é
	}
	for _, r := range s {
		if r >= 0x300 && !isCJKUnified(r) && unicode.Is(unicode.Mn, r) {
			return true
		}
	}
	return false
}

// isCJKUnified reports whether r is in the CJK Unified Ideographs block, every code point of
// which is Han (a test checks it against the unicode tables): most of a Chinese text, answered
// without a table search.
func isCJKUnified(r rune) bool { return r >= 0x4E00 && r <= 0x9FFF }

// stripMarks removes nonspacing marks after canonical decomposition, then recomposes.
func stripMarks(s string) string {
	d := norm.NFD.String(s)
	var b strings.Builder
	b.Grow(len(d))
	for _, r := range d {
		if unicode.Is(unicode.Mn, r) {
			continue
		}
		b.WriteRune(r)
	}
	return norm.NFC.String(b.String())
}

// isBigramScript reports whether r belongs to a script written without spaces between words.
func isBigramScript(r rune) bool {
	if r < 0x0E00 {
		return false
	}
	if isCJKUnified(r) {
		return true
	}
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) ||
		unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Thai, r)
}

// isWordRune reports whether r is part of a word: a letter, a digit, or a spacing mark (the
// tokenizers of both databases treat those as token characters).
func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r >= 'A' && r <= 'Z'
	}
	return unicode.IsLetter(r) || unicode.IsNumber(r)
}

// Token is one unit of normalised text.
type Token struct {
	Text string
	// CJK is true for character unigrams and bigrams of scripts written without spaces.
	CJK bool
	// Uni is true for the character unigrams of a CJK run of two or more characters.
	Uni bool
	// Stop is true for English stop words.
	Stop bool
}

// Tokens returns every token of text in order, stop words included (flagged), for display-aware
// callers and feature extraction. Text must not be normalised already (it is normalised here).
func Tokens(text string) []Token {
	s := Normalize(text)
	// About one token a word of Latin text, two a character of Chinese (a unigram and a bigram,
	// three bytes of text).
	capacity := len(s)/5 + 1
	if !isASCII(s) {
		capacity = len(s)*2/3 + 1
	}
	out := make([]Token, 0, capacity)
	var starts []int // reused by every run of bigram script
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case isBigramScript(r):
			j := i
			starts = starts[:0]
			for j < len(s) {
				r2, n2 := utf8.DecodeRuneInString(s[j:])
				if !isBigramScript(r2) {
					break
				}
				starts = append(starts, j)
				j += n2
			}
			if len(starts) == 1 {
				out = append(out, Token{Text: s[i:j], CJK: true})
			} else {
				for k := 0; k+1 < len(starts); k++ {
					end := j
					if k+2 < len(starts) {
						end = starts[k+2]
					}
					out = append(out, Token{Text: s[starts[k]:starts[k+1]], CJK: true, Uni: true})
					out = append(out, Token{Text: s[starts[k]:end], CJK: true})
				}
				out = append(out, Token{Text: s[starts[len(starts)-1]:j], CJK: true, Uni: true})
			}
			i = j
		case isWordRune(r):
			j := i + n
			runes := 1
			for j < len(s) {
				r2, n2 := utf8.DecodeRuneInString(s[j:])
				if !isWordRune(r2) || isBigramScript(r2) {
					break
				}
				j += n2
				runes++
			}
			if runes <= MaxTermRunes {
				w := s[i:j]
				out = append(out, Token{Text: w, Stop: stop[w]})
			}
			i = j
		default:
			i += n
		}
	}
	return out
}

// Terms returns the scoring terms of text: words without English stop words, and Chinese (Han,
// Kana, Thai) character unigrams and overlapping bigrams. Duplicates are kept, in order.
func Terms(text string) []string {
	toks := Tokens(text)
	out := make([]string, 0, len(toks))
	for _, t := range toks {
		if !t.Stop {
			out = append(out, t.Text)
		}
	}
	return out
}

// IndexForm returns Terms(text) joined by single spaces: the value of the keyword index column.
// Both FTS5 (unicode61) and PostgreSQL to_tsvector('simple', ...) tokenize it back into exactly
// those terms.
func IndexForm(text string) string { return strings.Join(Terms(text), " ") }

// Query returns the distinct terms of a query, in first-seen order.
func Query(text string) []string { return Distinct(Terms(text)) }

// Distinct keeps the first of each term of ts, in order; it reuses ts.
func Distinct(ts []string) []string {
	seen := make(map[string]bool, len(ts))
	out := ts[:0]
	for _, t := range ts {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}
