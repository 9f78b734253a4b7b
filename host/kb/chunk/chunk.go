// Package chunk splits document text into retrieval chunks (SPEC.md rule 2).
//
// Markdown heading lines (# to ######) start a new chunk and become its Heading; blank lines
// separate paragraphs; consecutive short paragraphs are packed into one chunk up to Size; a
// paragraph longer than Size is cut by a sliding window that overlaps by Overlap, cutting at a
// sentence end (. ! ? 。！？) or whitespace near the window end when there is one. Sizes count
// characters (runes), never bytes, so a chunk never splits a UTF-8 sequence.
package chunk

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/reelforge/reelforge/sdk/errcode"
)

// Defaults of SPEC.md rule 2 and the limits of DECISIONS.md.
const (
	DefaultSize    = 1000
	DefaultOverlap = 180
	MinSize        = 200
	MaxSize        = 4000
)

// Options are the window size and overlap in characters.
type Options struct {
	Size    int
	Overlap int
}

// Default returns the options of SPEC.md rule 2: 1000 characters with 180 overlap.
func Default() Options { return Options{Size: DefaultSize, Overlap: DefaultOverlap} }

// Validate checks Size in 200..4000 and Overlap in 0..Size/2. The error is a VALIDATION_ERROR
// whose details name the fields chunk_size and chunk_overlap.
func (o Options) Validate() error {
	var fields []errcode.FieldError
	if o.Size < MinSize || o.Size > MaxSize {
		fields = append(fields, errcode.FieldError{Field: "chunk_size", Problem: "must be between 200 and 4000"})
	}
	if o.Overlap < 0 || o.Overlap > o.Size/2 {
		fields = append(fields, errcode.FieldError{Field: "chunk_overlap", Problem: "must be between 0 and chunk_size/2"})
	}
	if len(fields) == 0 {
		return nil
	}
	msg := fields[0].Field + ": " + fields[0].Problem
	for _, f := range fields[1:] {
		msg += "; " + f.Field + ": " + f.Problem
	}
	return errcode.New(errcode.Validation, msg).WithDetails(fields)
}

// Chunk is one piece of a document.
type Chunk struct {
	Index   int    // 0-based position in the document
	Heading string // text of the closest Markdown heading above, "" when none
	Text    string // the chunk text, trimmed of surrounding whitespace
	Start   int    // rune offset of Text in the input
	End     int    // rune offset just past Text
	Runes   int    // length of Text in runes
}

type span struct{ s, e int }

// Split cuts text into chunks. Invalid options are clamped into their valid ranges (call Validate
// first to reject them). Empty or blank text gives no chunks. Invalid UTF-8 is treated rune by
// rune as U+FFFD, so chunk texts are always valid UTF-8.
func Split(text string, opt Options) []Chunk {
	if opt.Size < 1 {
		opt.Size = DefaultSize
	}
	if opt.Overlap < 0 {
		opt.Overlap = 0
	}
	if opt.Overlap > opt.Size/2 {
		opt.Overlap = opt.Size / 2
	}
	c := &splitter{opt: opt}
	if utf8.ValidString(text) {
		// Chunk texts are then slices of text itself, found through the byte offset of each
		// rune, instead of new strings encoded back from runes.
		c.text = text
		c.rs = make([]rune, 0, len(text))
		c.off = make([]int, 0, len(text)+1)
		for i, r := range text {
			c.rs = append(c.rs, r)
			c.off = append(c.off, i)
		}
		c.off = append(c.off, len(text))
	} else {
		c.rs = []rune(text)
	}
	c.run()
	return c.out
}

type splitter struct {
	rs      []rune
	text    string // the input when it is valid UTF-8, else ""
	off     []int  // byte offset in text of each rune of rs, and len(text) (nil when text is "")
	opt     Options
	out     []Chunk
	heading string
	cur     span // packed paragraphs waiting to be emitted; cur.e == 0 when empty
	curSet  bool
}

func (c *splitter) run() {
	// Walk lines, collecting paragraphs.
	n := len(c.rs)
	para := span{-1, -1}
	for i := 0; i < n; {
		j := i
		for j < n && c.rs[j] != '\n' {
			j++
		}
		line := span{i, j}
		switch {
		case c.blank(line):
			if para.s >= 0 {
				c.paragraph(para)
				para = span{-1, -1}
			}
		case c.isHeading(line):
			if para.s >= 0 {
				c.paragraph(para)
				para = span{-1, -1}
			}
			c.flush()
			c.heading = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(string(c.rs[line.s:line.e])), "#"))
			c.paragraph(line)
		default:
			if para.s < 0 {
				para.s = i
			}
			para.e = j
		}
		i = j + 1
	}
	if para.s >= 0 {
		c.paragraph(para)
	}
	c.flush()
}

func (c *splitter) blank(l span) bool {
	for _, r := range c.rs[l.s:l.e] {
		if !unicode.IsSpace(r) {
			return false
		}
	}
	return true
}

func (c *splitter) isHeading(l span) bool {
	s := l.s
	for s < l.e && (c.rs[s] == ' ' || c.rs[s] == '\t') && s-l.s < 3 {
		s++
	}
	k := 0
	for s+k < l.e && c.rs[s+k] == '#' {
		k++
	}
	return k >= 1 && k <= 6 && s+k < l.e && (c.rs[s+k] == ' ' || c.rs[s+k] == '\t')
}

// paragraph adds one paragraph (or heading line) to the packing window.
func (c *splitter) paragraph(p span) {
	p = c.trim(p)
	if p.e <= p.s {
		return
	}
	if p.e-p.s > c.opt.Size {
		if c.curSet && p.s-c.cur.s < c.opt.Size/4 {
			// A heading or short lead-in joins the window instead of standing alone.
			p.s, c.curSet = c.cur.s, false
		}
		c.flush()
		c.window(p)
		return
	}
	if c.curSet && p.e-c.cur.s <= c.opt.Size {
		c.cur.e = p.e
		return
	}
	c.flush()
	c.cur, c.curSet = p, true
}

func (c *splitter) flush() {
	if c.curSet {
		c.emit(c.cur)
		c.curSet = false
	}
}

func (c *splitter) trim(p span) span {
	for p.s < p.e && unicode.IsSpace(c.rs[p.s]) {
		p.s++
	}
	for p.e > p.s && unicode.IsSpace(c.rs[p.e-1]) {
		p.e--
	}
	return p
}

func (c *splitter) emit(p span) {
	p = c.trim(p)
	if p.e <= p.s {
		return
	}
	var text string
	if c.off != nil {
		text = c.text[c.off[p.s]:c.off[p.e]]
	} else {
		text = string(c.rs[p.s:p.e])
	}
	c.out = append(c.out, Chunk{Index: len(c.out), Heading: c.heading, Text: text,
		Start: p.s, End: p.e, Runes: p.e - p.s})
}

func isSentenceEnd(r rune) bool {
	switch r {
	case '.', '!', '?', '。', '！', '？', ';', '；', '\n':
		return true
	}
	return false
}

// endsAt reports whether a sentence ends just before rune i: a Chinese terminator, a semicolon or
// a line break, or a Latin . ! ? followed by blank space or the end, so a window is never cut inside
// a number (2.40), an address (example.com) or an abbreviation's points.
func (c *splitter) endsAt(i int) bool {
	r := c.rs[i-1]
	if !isSentenceEnd(r) {
		return false
	}
	if r == '.' || r == '!' || r == '?' {
		return i >= len(c.rs) || unicode.IsSpace(c.rs[i])
	}
	return true
}

// window slides over a long paragraph.
func (c *splitter) window(p span) {
	size, overlap := c.opt.Size, c.opt.Overlap
	pos := p.s
	for pos < p.e {
		if p.e-pos <= size {
			c.emit(span{pos, p.e})
			return
		}
		end := pos + size
		cut := -1
		// A sentence end in the last fifth of the window, else whitespace in the last tenth.
		for i := end; i > end-size/5 && i > pos; i-- {
			if c.endsAt(i) {
				cut = i
				break
			}
		}
		if cut < 0 {
			for i := end; i > end-size/10 && i > pos; i-- {
				if unicode.IsSpace(c.rs[i-1]) {
					cut = i
					break
				}
			}
		}
		if cut < 0 {
			cut = end
		}
		c.emit(span{pos, cut})
		next := cut - overlap
		if overlap > 0 {
			// Start the overlap at a word or sentence start when one is close.
			for i := next; i < cut && i < next+overlap/3; i++ {
				if i > 0 && (unicode.IsSpace(c.rs[i-1]) || c.endsAt(i)) {
					next = i
					break
				}
			}
		}
		if next <= pos {
			next = cut
		}
		pos = next
		for pos < p.e && unicode.IsSpace(c.rs[pos]) {
			pos++
		}
	}
}
