// Package clean turns stored knowledge text (Markdown, HTML, tables, CSV) into plain sentences
// before it is quoted, narrated or captioned: headings, list and table syntax, emphasis and links
// are stripped, and a table or CSV row becomes one sentence that names its columns.
package clean

import (
	"html"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

var (
	reTag       = regexp.MustCompile(`(?s)<(script|style)[^>]*>.*?</(script|style)>|</?[a-zA-Z][a-zA-Z0-9]*(\s[^<>]*)?/?>`)
	reHeading   = regexp.MustCompile(`^\s{0,3}#{1,6}(\s+|$)`)
	reRule      = regexp.MustCompile(`^\s*([-*_=]\s*){3,}$`)
	reTableSep  = regexp.MustCompile(`^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$`)
	reBullet    = regexp.MustCompile(`^\s*(?:[-*+•·]|\d{1,3}[.)、])\s+`)
	reQuote     = regexp.MustCompile(`^\s*>+\s?`)
	reImage     = regexp.MustCompile(`!\[([^\]]*)\]\([^)]*\)`)
	reLink      = regexp.MustCompile(`\[([^\]]+)\]\([^)]*\)`)
	reBold      = regexp.MustCompile(`\*\*([^*]+)\*\*|__([^_]+)__`)
	reItalic    = regexp.MustCompile(`(^|[^\w*])\*([^*\s][^*]*)\*|(^|[^\w])_([^_\s][^_]*)_([^\w]|$)`)
	reCode      = regexp.MustCompile("`([^`]*)`")
	reFence     = regexp.MustCompile("^\\s*(```|~~~)")
	reFootnote  = regexp.MustCompile(`\[\^[^\]]+\]`)
	reSpaces    = regexp.MustCompile(`[ \t]+`)
	sentenceEnd = ".!?。！？…:：;；"
)

// Text returns text as plain sentences, one paragraph or converted row a line.
func Text(text string) string {
	if strings.ContainsRune(text, '<') {
		text = reTag.ReplaceAllString(text, " ")
	}
	text = html.UnescapeString(strings.ReplaceAll(text, "\r\n", "\n"))
	lines := strings.Split(text, "\n")
	var out []string
	var para []string
	flush := func() {
		if len(para) > 0 {
			out = append(out, strings.Join(para, joiner(para)))
			para = nil
		}
	}
	inFence := false
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if reFence.MatchString(l) {
			inFence = !inFence
			flush()
			continue
		}
		if inFence {
			continue // code is not prose
		}
		switch {
		case strings.TrimSpace(l) == "":
			flush()
			continue
		case reHeading.MatchString(l), reRule.MatchString(l), reTableSep.MatchString(l):
			flush()
			continue
		case isTableRow(l):
			flush()
			j := i
			for j < len(lines) && (isTableRow(lines[j]) || reTableSep.MatchString(lines[j])) {
				j++
			}
			out = append(out, rows(lines[i:j], tableCells)...)
			i = j - 1
			continue
		}
		if n := delimited(lines, i); n > 0 {
			flush()
			out = append(out, rows(lines[i:i+n], csvCells)...)
			i += n - 1
			continue
		}
		if reBullet.MatchString(l) {
			flush()
			if s := inline(reBullet.ReplaceAllString(l, "")); s != "" {
				out = append(out, endSentence(s))
			}
			continue
		}
		if s := inline(reQuote.ReplaceAllString(l, "")); s != "" {
			para = append(para, s)
		}
	}
	flush()
	return strings.Join(out, "\n")
}

// joiner joins the lines of a paragraph: nothing between Chinese lines, a space otherwise.
func joiner(para []string) string {
	for _, p := range para {
		r, _ := utf8.DecodeLastRuneInString(p)
		if !unicode.Is(unicode.Han, r) && !strings.ContainsRune("。！？；：，、", r) {
			return " "
		}
	}
	return ""
}

// inline strips emphasis, code marks, links (keeping their text) and images (keeping their alt
// text) from one line.
func inline(s string) string {
	s = reImage.ReplaceAllString(s, "$1")
	s = reLink.ReplaceAllString(s, "$1")
	s = reFootnote.ReplaceAllString(s, "")
	s = reBold.ReplaceAllString(s, "$1$2")
	s = reItalic.ReplaceAllString(s, "$1$2$3$4$5")
	s = reCode.ReplaceAllString(s, "$1")
	return strings.TrimSpace(reSpaces.ReplaceAllString(s, " "))
}

// endSentence ends s with a full stop when it has no closing punctuation (a list item or a row),
// so the sentence splitter keeps it whole and apart.
func endSentence(s string) string {
	r, _ := utf8.DecodeLastRuneInString(s)
	if strings.ContainsRune(sentenceEnd, r) || strings.ContainsRune(`"'”’」』)）`, r) {
		return s
	}
	if hasHan(s) {
		return s + "。"
	}
	return s + "."
}

func hasHan(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Han, r) {
			return true
		}
	}
	return false
}

func isTableRow(l string) bool {
	t := strings.TrimSpace(l)
	return strings.HasPrefix(t, "|") && strings.Count(t, "|") >= 2
}

func tableCells(l string) []string {
	t := strings.Trim(strings.TrimSpace(l), "|")
	parts := strings.Split(t, "|")
	for i, p := range parts {
		parts[i] = inline(p)
	}
	return parts
}

// delimited returns how many lines from i form a CSV or tab-separated block: at least two lines
// with the same number (two or more) of fields and no sentence punctuation at their ends; 0 when
// line i starts none.
func delimited(lines []string, i int) int {
	sep := func(l string) (rune, int) {
		if n := strings.Count(l, "\t"); n >= 1 {
			return '\t', n
		}
		return ',', strings.Count(l, ",")
	}
	s0, n0 := sep(lines[i])
	if n0 < 1 || (s0 == ',' && n0 < 2) || looksLikeProse(lines[i]) {
		return 0
	}
	j := i + 1
	for j < len(lines) {
		s, n := sep(lines[j])
		if s != s0 || n != n0 || strings.TrimSpace(lines[j]) == "" {
			break
		}
		j++
	}
	if j-i < 2 {
		return 0
	}
	return j - i
}

// looksLikeProse reports whether a line reads as a sentence rather than a row of fields.
func looksLikeProse(l string) bool {
	t := strings.TrimSpace(l)
	r, _ := utf8.DecodeLastRuneInString(t)
	return strings.ContainsRune(".!?。！？", r) && strings.Count(t, " ") > strings.Count(t, ",")*3
}

func csvCells(l string) []string {
	sep := ","
	if strings.Contains(l, "\t") {
		sep = "\t"
	}
	parts := strings.Split(l, sep)
	for i, p := range parts {
		parts[i] = inline(strings.Trim(strings.TrimSpace(p), `"`))
	}
	return parts
}

// rows turns the lines of a table (its first line the header) into one sentence a row:
// "header: cell; header: cell." A single line is its cells joined.
func rows(lines []string, cells func(string) []string) []string {
	var body [][]string
	for _, l := range lines {
		if reTableSep.MatchString(l) {
			continue
		}
		body = append(body, cells(l))
	}
	if len(body) == 0 {
		return nil
	}
	if len(body) == 1 {
		return []string{endSentence(strings.Join(nonEmpty(body[0]), ", "))}
	}
	header, zh := body[0], false
	for _, h := range header {
		zh = zh || hasHan(h)
	}
	colon, semi := ": ", "; "
	if zh {
		colon, semi = "：", "；"
	}
	var out []string
	for _, row := range body[1:] {
		var parts []string
		for k, c := range row {
			if c == "" {
				continue
			}
			if k < len(header) && header[k] != "" {
				parts = append(parts, header[k]+colon+c)
			} else {
				parts = append(parts, c)
			}
		}
		if len(parts) > 0 {
			out = append(out, endSentence(strings.Join(parts, semi)))
		}
	}
	return out
}

func nonEmpty(ss []string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
