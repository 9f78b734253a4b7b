// Package sentence splits text into sentences for the plugins that quote or caption it.
package sentence

import "strings"

// Ends are the sentence terminators of English and Chinese text.
const Ends = ".!?。！？"

// Split cuts text after every rune of ends and at line breaks, trimming each piece and dropping
// empty ones.
func Split(text, ends string) []string {
	var out []string
	var cur strings.Builder
	flush := func() {
		if s := strings.TrimSpace(cur.String()); s != "" {
			out = append(out, s)
		}
		cur.Reset()
	}
	for _, r := range text {
		if r == '\n' {
			flush()
			continue
		}
		cur.WriteRune(r)
		if strings.ContainsRune(ends, r) {
			flush()
		}
	}
	flush()
	return out
}
