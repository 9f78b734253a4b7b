package render

import (
	"encoding/binary"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/rivo/uniseg"

	"github.com/reelforge/reelforge/internal/zhwords"
)

// Word timing: when each word of a sentence is said, so the caption can highlight it.
//
// espeak-ng's program does not report its word events (only its library's callback does), so the
// words are aligned to the sentence's own audio: the pauses in it (silence of at least
// pauseMin) are matched to the clause punctuation of the sentence, and within each clause the
// words share its spoken time by their length (weight). Measured against the library's word
// events on English and Mandarin sentences (docs/captions.md), a word's start is off by 70 ms on
// average (90% within 160 ms: about two frames); spreading the words over the whole sentence was
// off by 105 ms, and synthesising every word alone to get its relative length was no better
// (103 ms) while costing one espeak-ng process per word.

// Word is a spoken word of a caption and when it is said, in seconds. Its Text is the word as the
// caption shows it (with the punctuation that follows it; a Chinese word as internal/zhwords finds it).
type Word struct {
	Text  string  `json:"text"`
	Start float64 `json:"start"`
	End   float64 `json:"end"`
}

// unit is a spoken word's byte range in its text: its letters or digits and what follows them up
// to the next word (punctuation, emoji, spaces).
type unit struct{ from, to int }

// spokenUnits splits text into the words a voice says, by the Unicode word boundaries (UAX #29:
// a Latin word whole, each Han character alone), the Han characters of one Chinese word joined
// (internal/zhwords: "咖啡" is highlighted and timed as one word, not "咖" then "啡").
// Punctuation, symbols and emoji are not said: they go with the word before them (or the first
// word, at the start).
func spokenUnits(text string) []unit {
	var out []unit
	var inside map[int]bool // offsets inside Chinese words
	if strings.ContainsFunc(text, func(r rune) bool { return unicode.Is(unicode.Han, r) }) {
		inside = zhwords.Inside(text)
	}
	state, pos := -1, 0
	rest := text
	for len(rest) > 0 {
		var w string
		w, rest, state = uniseg.FirstWordInString(rest, state)
		said := strings.ContainsFunc(w, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) })
		switch {
		case said && inside[pos] && len(out) > 0 && out[len(out)-1].to == pos:
			out[len(out)-1].to = pos + len(w) // the next character of the same Chinese word
		case said:
			out = append(out, unit{pos, pos + len(w)})
		case len(out) > 0:
			out[len(out)-1].to = pos + len(w)
		}
		pos += len(w)
	}
	if len(out) > 0 {
		out[0].from = 0
	}
	return out
}

// unitText is a unit's text without the spaces around it.
func unitText(text string, u unit) string { return strings.TrimSpace(text[u.from:u.to]) }

// wordWeight is how long a word takes to say, roughly: a Latin letter one, a Han character three
// (as weight), a digit three (a number is read as words).
func wordWeight(s string) float64 {
	n := 0
	for _, r := range s {
		switch {
		case unicode.IsDigit(r):
			n += 3
		case unicode.Is(unicode.Han, r):
			n += 3
		case unicode.IsLetter(r):
			n++
		}
	}
	return float64(max(n, 1))
}

// spreadWords shares the time from..to among the words of text by their weight: the estimate
// when nothing was measured.
func spreadWords(text string, from, to float64) []Word {
	units := spokenUnits(text)
	out := make([]Word, 0, len(units))
	spread(text, units, from, to, &out)
	return out
}

func spread(text string, units []unit, from, to float64, out *[]Word) {
	total := 0.0
	for _, u := range units {
		total += wordWeight(text[u.from:u.to])
	}
	t := from
	for _, u := range units {
		d := (to - from) * wordWeight(text[u.from:u.to]) / max(total, 1)
		*out = append(*out, Word{Text: unitText(text, u), Start: round3(t), End: round3(t + d)})
		t += d
	}
}

// Silence of the alignment: samples at most silentLevel (of 32767) for at least pauseMin seconds.
const (
	silentLevel = 400
	pauseMin    = 0.09
)

// alignWords times the words of a sentence in its audio: pcm is its 16-bit mono samples at rate
// Hz, said from offset seconds on the narration's clock. Other sample formats get the estimate
// (spreadWords over the whole audio).
func alignWords(text string, pcm []byte, rate, channels, bits int, offset float64) []Word {
	units := spokenUnits(text)
	if len(units) == 0 {
		return []Word{}
	}
	if rate <= 0 || channels != 1 || bits != 16 || len(pcm) < 2 {
		secs := 0.0
		if rate > 0 && channels > 0 && bits > 0 {
			secs = float64(len(pcm)) / float64(rate*channels*bits/8)
		}
		return spreadWords(text, offset, offset+secs)
	}
	n := len(pcm) / 2
	total := float64(n) / float64(rate)
	type span struct{ from, to float64 }
	var silences []span
	start := -1
	for i := 0; i <= n; i++ {
		quiet := i < n && math.Abs(float64(int16(binary.LittleEndian.Uint16(pcm[2*i:])))) <= silentLevel
		switch {
		case quiet && start < 0:
			start = i
		case !quiet && start >= 0:
			if float64(i-start)/float64(rate) >= pauseMin || start == 0 || i == n {
				silences = append(silences, span{float64(start) / float64(rate), float64(i) / float64(rate)})
			}
			start = -1
		}
	}
	speechFrom, speechTo := 0.0, total
	var pauses []span
	for _, s := range silences {
		switch {
		case s.from == 0:
			speechFrom = s.to
		case s.to >= total:
			speechTo = s.from
		default:
			pauses = append(pauses, s)
		}
	}
	if speechTo <= speechFrom { // all silence: nothing to align to
		return spreadWords(text, offset, offset+total)
	}
	// The clause ends: words followed by punctuation a voice pauses at.
	var breaks []int
	for i, u := range units[:len(units)-1] {
		if last, _ := utf8.DecodeLastRuneInString(unitText(text, u)); strings.ContainsRune(",，、;；:：—…", last) {
			breaks = append(breaks, i+1)
		}
	}
	// More pauses than clause ends: the longest are the clauses' (a stop consonant's closure is
	// short); fewer: the clauses are not told apart.
	if len(pauses) > len(breaks) {
		for len(pauses) > len(breaks) {
			shortest := 0
			for i, p := range pauses {
				if p.to-p.from < pauses[shortest].to-pauses[shortest].from {
					shortest = i
				}
			}
			pauses = append(pauses[:shortest], pauses[shortest+1:]...)
		}
	}
	if len(pauses) < len(breaks) {
		breaks, pauses = nil, nil
	}
	out := make([]Word, 0, len(units))
	first, from := 0, speechFrom
	for k := 0; k <= len(breaks); k++ {
		last, to := len(units), speechTo
		if k < len(breaks) {
			last, to = breaks[k], pauses[k].from
		}
		spread(text, units[first:last], offset+from, offset+to, &out)
		if k < len(breaks) {
			first, from = last, pauses[k].to
		}
	}
	return out
}
