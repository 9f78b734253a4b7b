// Package sentence splits text into sentences, for the plugins that quote or caption text and the
// knowledge base's extractive answers: the one rule of where a sentence ends.
package sentence

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Ends are the sentence terminators of English and Chinese text.
const Ends = ".!?。！？"

// abbreviations end in a point that does not end a sentence (compared lower case, without the
// final point).
var abbreviations = map[string]bool{
	"mr": true, "mrs": true, "ms": true, "dr": true, "prof": true, "st": true, "jr": true, "sr": true,
	"e.g": true, "i.e": true, "vs": true, "no": true, "approx": true, "inc": true, "ltd": true, "co": true,
	"u.s": true, "u.k": true, "fig": true, "cf": true, "a.m": true, "p.m": true, "mt": true, "dept": true,
}

// Split cuts text after every rune of ends and at line breaks, trimming each piece and dropping
// empty ones. A Latin terminator (. ! ?) ends a sentence only when blank space or the end of the
// text follows it (a closing quote or bracket may come between), so numbers (2.40), addresses
// (example.com/a.b) and abbreviations (e.g., Dr.) are never cut; a point after a known
// abbreviation does not end a sentence either. Chinese terminators always end one.
func Split(text, ends string) []string {
	var out []string
	var cur strings.Builder
	flush := func() {
		if s := strings.TrimSpace(cur.String()); s != "" {
			out = append(out, s)
		}
		cur.Reset()
	}
	skip := 0 // bytes of closing quotes already taken into the last sentence
	for i, r := range text {
		if i < skip {
			continue
		}
		if r == '\n' {
			flush()
			continue
		}
		cur.WriteRune(r)
		if !strings.ContainsRune(ends, r) {
			continue
		}
		if r >= utf8.RuneSelf || !strings.ContainsRune(".!?", r) || endsHere(text, i, r, cur.String()) {
			// Take what closes the sentence along with it: closing quotes and brackets, more
			// terminators (？！) and the emoji that end it ("为什么？☕", "Done! 🎉"), so no
			// sentence is made of those alone.
			for j := i + utf8.RuneLen(r); j < len(text); {
				c, n := utf8.DecodeRuneInString(text[j:])
				switch {
				case strings.ContainsRune(closers, c), strings.ContainsRune(ends, c) && c >= utf8.RuneSelf, decoration(c):
				case c == ' ' || c == '\t':
					k := len(text) - len(strings.TrimLeft(text[j:], " \t"))
					if next, _ := utf8.DecodeRuneInString(text[k:]); k == len(text) || !decoration(next) {
						j = len(text) // only blank space follows: the sentence ends here
						continue
					}
					cur.WriteString(text[j:k])
					j, skip = k, k
					continue
				default:
					j = len(text)
					continue
				}
				cur.WriteRune(c)
				j += n
				skip = j
			}
			flush()
		}
	}
	flush()
	return out
}

// closers are the closing quotes and brackets a sentence takes along after its terminator.
const closers = `"')]”’」』）`

// decoration reports whether r is an emoji or symbol that a sentence may end with after its
// terminator (and the joiners and modifiers of emoji sequences).
func decoration(r rune) bool {
	switch {
	case r == 0x200D, r == 0xFE0E, r == 0xFE0F, r == 0x20E3, r >= 0x1F3FB && r <= 0x1F3FF:
		return true
	}
	return unicode.Is(unicode.So, r) || unicode.Is(unicode.Sk, r)
}

// endsHere reports whether the Latin terminator r at byte i of text ends a sentence; cur is the
// sentence so far, r included.
func endsHere(text string, i int, r rune, cur string) bool {
	rest := strings.TrimLeftFunc(text[i+1:], func(c rune) bool { return strings.ContainsRune(closers, c) || decoration(c) })
	if rest != "" {
		next, _ := utf8.DecodeRuneInString(rest)
		if !unicode.IsSpace(next) {
			return false // 2.40, example.com, ?!, "..."
		}
	}
	if r != '.' {
		return true
	}
	word := cur[:len(cur)-1]
	if k := strings.LastIndexFunc(word, unicode.IsSpace); k >= 0 {
		word = word[k+1:]
	}
	word = strings.TrimLeft(word, `"'([“‘`)
	if abbreviations[strings.ToLower(word)] {
		return false
	}
	// A single capital letter and a point is an initial (J. Smith), unless it ends the text.
	if utf8.RuneCountInString(word) == 1 && unicode.IsUpper([]rune(word)[0]) && strings.TrimSpace(rest) != "" {
		return false
	}
	return true
}
