package parse

import (
	"bytes"
	"compress/zlib"
	"io"
	"regexp"
	"strings"
)

var streamRe = regexp.MustCompile(`(?s)<<(.{0,1000}?)>>\s*stream\r?\n`)

// pdfFallback is a small pure-Go text extractor for when pdftotext is missing: it inflates the
// content streams and collects the strings shown by the Tj, TJ, ' and " operators. It handles
// simple PDFs with standard encodings; fonts with custom encodings come out garbled or empty,
// which is why poppler is preferred.
//
// It is written here instead of taken from a Go PDF reader because an upload must do bounded work
// on any input, and a goroutine cannot be stopped from outside. github.com/ledongthuc/pdf, the
// maintained pure-Go text reader, walks a page tree whose only kid is the tree itself forever
// (measured on its 2026-09 version: still running after 5 s on a 300-byte file). This extractor
// reads each stream of the file once and inflates at most inflateBudget in all, and
// FuzzPDFFallback runs it on arbitrary bytes.
func pdfFallback(data []byte) (string, error) { return extractPDF(data, inflateBudget) }

// inflateBudget bounds what pdfFallback inflates from one file, all its streams together: deflate
// expands up to about 1000 times, so a few MB of crafted streams would otherwise make many GB.
const inflateBudget = 64 << 20

// extractPDF is pdfFallback with the inflate budget given. Its work is linear in the file: each
// stream is read once, and a stream header found inside a stream's data is part of that data.
func extractPDF(data []byte, budget int64) (string, error) {
	var b strings.Builder
	next := 0 // the end of the last stream taken
	for _, m := range streamRe.FindAllSubmatchIndex(data, -1) {
		if m[0] < next {
			continue
		}
		dict := data[m[2]:m[3]]
		start := m[1]
		end := bytes.Index(data[start:], []byte("endstream"))
		if end < 0 {
			break // no later stream has an end either
		}
		next = start + end + len("endstream")
		raw := data[start : start+end]
		if bytes.Contains(dict, []byte("/Subtype/Image")) || bytes.Contains(dict, []byte("/Subtype /Image")) ||
			bytes.Contains(dict, []byte("/Length1")) { // images and embedded fonts
			continue
		}
		content := raw
		if bytes.Contains(dict, []byte("/FlateDecode")) {
			if budget <= 0 {
				break
			}
			zr, err := zlib.NewReader(bytes.NewReader(raw))
			if err != nil {
				continue
			}
			content, _ = io.ReadAll(io.LimitReader(zr, budget)) // a damaged stream keeps the text inflated before the damage
			zr.Close()
			budget -= int64(len(content))
		} else if bytes.Contains(dict, []byte("/Filter")) {
			continue
		}
		showText(&b, content)
	}
	return b.String(), nil
}

// showText appends the strings of the text operators in one content stream.
func showText(b *strings.Builder, c []byte) {
	var pending []string
	line := func() {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteString("\n")
		}
	}
	for i := 0; i < len(c); i++ {
		switch ch := c[i]; {
		case ch == '(':
			s, n := pdfString(c[i:])
			pending = append(pending, s)
			i += n - 1
		case ch == '%':
			for i < len(c) && c[i] != '\n' && c[i] != '\r' {
				i++
			}
		case ch >= 'A' && ch <= 'z':
			j := i
			for j < len(c) && (c[j] >= 'A' && c[j] <= 'z' || c[j] == '*' || c[j] == '\'' || c[j] == '"') {
				j++
			}
			switch string(c[i:j]) {
			case "Tj", "TJ":
				b.WriteString(strings.Join(pending, ""))
			case "'", "\"":
				line()
				b.WriteString(strings.Join(pending, ""))
			case "T*", "Td", "TD", "ET":
				line()
			}
			pending = pending[:0] // strings are kept only for the show operators
			i = j - 1
		case ch == '\'' || ch == '"':
			line()
			b.WriteString(strings.Join(pending, ""))
			pending = pending[:0]
		}
	}
}

// pdfString decodes a literal string starting at c[0] == '(' and returns it with the bytes used.
func pdfString(c []byte) (string, int) {
	var out []byte
	depth := 0
	i := 0
	for ; i < len(c); i++ {
		ch := c[i]
		switch {
		case ch == '\\' && i+1 < len(c):
			i++
			switch e := c[i]; e {
			case 'n':
				out = append(out, '\n')
			case 'r', 't', 'b', 'f':
				out = append(out, ' ')
			case '\r', '\n':
			default:
				if e >= '0' && e <= '7' {
					v, k := 0, 0
					for k < 3 && i+k < len(c) && c[i+k] >= '0' && c[i+k] <= '7' {
						v = v*8 + int(c[i+k]-'0')
						k++
					}
					i += k - 1
					out = append(out, byte(v))
				} else {
					out = append(out, e)
				}
			}
		case ch == '(':
			if depth > 0 {
				out = append(out, ch)
			}
			depth++
		case ch == ')':
			depth--
			if depth == 0 {
				return latin1(out), i + 1
			}
			out = append(out, ch)
		default:
			out = append(out, ch)
		}
	}
	return latin1(out), i
}

// latin1 reads PDFDocEncoding/WinAnsi bytes as Latin-1 (close enough for text search); UTF-16BE
// strings with a BOM are decoded.
func latin1(b []byte) string {
	if len(b) >= 2 && b[0] == 0xFE && b[1] == 0xFF {
		return decodeText(b)
	}
	rs := make([]rune, len(b))
	for i, c := range b {
		rs[i] = rune(c)
	}
	return string(rs)
}
