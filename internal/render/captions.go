package render

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/rivo/uniseg"

	"github.com/reelforge/reelforge/internal/zhwords"
)

// Captions a viewer follows: a caption is broken into lines where Unicode allows a break (UAX #14,
// rivo/uniseg: never inside a word, never before closing punctuation such as "。" or "，"), into as
// few lines as fit and with the lines balanced rather than filled, so no line is left with one or
// two characters; a caption longer than a page's lines is split into balanced pages, at clause
// punctuation where there is some. The word being said is drawn in highlight.
//
// Chinese has no spaces: UAX #14 allows a break between any two Han characters, so a line could end
// inside a word ("流程一|旦"). The words are found with a frequency dictionary (internal/zhwords):
// a break inside one costs as much as a line of slack, so it happens only when no other break
// fits; a break between two words costs more than one at clause punctuation (a line is a clause
// where it can be) and a break after a character that often ends a phrase (的, 了, 是, ...).

// highlight is the colour of the word being said (the yellow of the short-video editors).
var highlight = color.NRGBA{R: 255, G: 214, B: 10, A: 255}

// clausePunct ends a clause: a break after it costs nothing.
const clausePunct = ",.;:!?，。、；：！？…—)）」』”’"

// phraseEnds are Chinese characters that often end a phrase (particles, the copula, conjunctions,
// prepositions): a break after one is likelier between words than a break after another character.
const phraseEnds = "的了是在和与及或就都也而但把被让给着过吗呢吧啊"

// articles are the English words that open a noun phrase and never end a line.
var articles = map[string]bool{"a": true, "an": true, "the": true}

// seg is the text between two line-break opportunities, by byte range of its text.
type seg struct {
	from, to int
	cols     int // columns of its text without the trailing spaces (a Han character two)
	space    int // columns of the trailing spaces
	hard     bool
	inWord   bool // the break after it falls inside a Chinese word
	// A break before it (tail) or after it (head) would part one word from the rest of its
	// clause: tail, it starts the word that ends a clause ("…behind each | step, the…");
	// head, it ends the word that opens one ("…, the | whole thing…", "，流程|一旦").
	tail, head bool
}

// segments splits text at its line-break opportunities. A segment wider than width (a long link)
// is cut between its characters: the one place a word is split, or it would leave the frame.
func segments(text string, width int) []seg {
	var out []seg
	var inside map[int]bool // offsets inside Chinese words
	if strings.IndexFunc(text, ideograph) >= 0 {
		inside = zhwords.Inside(text)
	}
	defer func() {
		for i := range out {
			out[i].inWord = inside[out[i].to]
		}
		markClauseEdges(text, out)
	}()
	state, pos := -1, 0
	rest := text
	for len(rest) > 0 {
		var s string
		var must bool
		s, rest, must, state = uniseg.FirstLineSegmentInString(rest, state)
		body := strings.TrimRightFunc(s, unicode.IsSpace)
		g := seg{from: pos, to: pos + len(s), cols: uniseg.StringWidth(body), space: uniseg.StringWidth(s[len(body):]), hard: must && len(rest) > 0}
		if g.cols <= width {
			out = append(out, g)
		} else {
			at, cols := pos, 0
			gr := uniseg.NewGraphemes(body)
			for gr.Next() {
				from, _ := gr.Positions()
				if w := gr.Width(); cols+w > width && cols > 0 {
					out = append(out, seg{from: at, to: pos + from, cols: cols})
					at, cols = pos+from, 0
				}
				cols += gr.Width()
			}
			out = append(out, seg{from: at, to: pos + len(s), cols: cols, space: g.space, hard: g.hard})
		}
		pos += len(s)
	}
	return out
}

// markClauseEdges sets each segment's tail and head: a word is a run of segments joined inside a
// Chinese word, a clause ends at clause punctuation.
func markClauseEdges(text string, segs []seg) {
	ends := func(g seg) bool {
		last, _ := utf8.DecodeLastRuneInString(strings.TrimRightFunc(text[g.from:g.to], unicode.IsSpace))
		return strings.ContainsRune(clausePunct, last)
	}
	for i := 0; i < len(segs); {
		j := i // the word is segs[i..j]
		for j < len(segs)-1 && segs[j].inWord {
			j++
		}
		segs[i].tail = ends(segs[j])
		segs[j].head = i > 0 && ends(segs[i-1]) && !ends(segs[j])
		i = j + 1
	}
}

// breakCost is what a break after a costs, in squared columns of slack (the unit of balance):
// nothing after clause punctuation, a little between Latin words or after a Chinese character
// that often ends a phrase, more between other Chinese words or where one word would be parted
// from its clause, a whole unit inside a Chinese word, where unit is the page's or line's width.
func breakCost(text string, a, b seg, unit int) int {
	last, _ := utf8.DecodeLastRuneInString(strings.TrimRightFunc(text[a.from:a.to], unicode.IsSpace))
	next, _ := utf8.DecodeRuneInString(text[b.from:b.to])
	switch {
	case next == '—' || next == '–':
		// A dash belongs to the clause before it: a line that opens with one reads as a list.
		return (unit / 2) * (unit / 2)
	case strings.ContainsRune(clausePunct, last):
		return 0
	case a.inWord:
		return unit * unit
	case b.tail || a.head:
		// One word parted from its clause, alone at a line's start or end, reads as an orphan
		// ("它让你认识同样喜欢它的|人，多了共同话题。", "Follow for more like|this, and share"):
		// break at the clause's punctuation instead, as subtitlers do, unless far more uneven.
		return (unit / 2) * (unit / 2)
	case a.space > 0 && articles[strings.ToLower(text[a.from:a.to-a.space])]:
		// An article belongs to the noun after it: "share this with | a friend", not "with a | friend".
		return (unit / 3) * (unit / 3)
	case a.space > 0:
		return (unit / 8) * (unit / 8)
	case strings.ContainsRune(phraseEnds, last) && ideograph(next):
		return (unit / 6) * (unit / 6)
	case ideograph(last) && ideograph(next):
		// Between two Chinese words, but not at clause punctuation: "关注我，|评论区告诉我你最认同
		// 哪一条！" reads better than "关注我，评论区告诉|我你最认同哪一条！", however uneven.
		return (unit / 2) * (unit / 2)
	}
	return (unit / 4) * (unit / 4)
}

func ideograph(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}

// groupWidth is the columns of segs[i:j] on one line (the last one's trailing spaces not counted).
func groupWidth(segs []seg, i, j int) int {
	w := 0
	for k := i; k < j; k++ {
		w += segs[k].cols
		if k < j-1 {
			w += segs[k].space
		}
	}
	return w
}

// fillCount is how many lines of width a greedy fill needs: the fewest there can be.
func fillCount(segs []seg, width int) int {
	n, w := 0, 0
	for i, s := range segs {
		if n == 0 || w+s.cols > width || i > 0 && segs[i-1].hard {
			n++
			w = 0
		}
		w += s.cols + s.space
	}
	return n
}

// balance splits segs into exactly n groups of at most width columns each, as even as the breaks'
// costs allow: the least sum of every group's squared slack (the last group's too: no orphan) and
// of its breaks' costs. It returns the groups' ends (nil when they cannot fit) and their cost.
func balance(text string, segs []seg, n, width int) ([]int, int) {
	const inf = math.MaxInt / 4
	s := len(segs)
	// best[k][j]: the least cost of segs[:j] in k groups; from[k][j] where the last group starts.
	best := make([][]int, n+1)
	from := make([][]int, n+1)
	for k := range best {
		best[k] = make([]int, s+1)
		from[k] = make([]int, s+1)
		for j := range best[k] {
			best[k][j] = inf
		}
	}
	best[0][0] = 0
	for k := 1; k <= n; k++ {
		for j := k; j <= s; j++ {
			for i := j - 1; i >= k-1; i-- {
				w := groupWidth(segs, i, j)
				if w > width {
					break
				}
				if best[k-1][i] == inf || i > 0 && i < j && hardInside(segs, i, j) {
					continue
				}
				c := best[k-1][i] + (width-w)*(width-w)
				if j < s {
					if !segs[j-1].hard {
						c += breakCost(text, segs[j-1], segs[j], width)
					}
				}
				if c < best[k][j] {
					best[k][j], from[k][j] = c, i
				}
			}
		}
	}
	if best[n][s] == inf {
		return nil, inf
	}
	ends := make([]int, n)
	for k, j := n, s; k > 0; k-- {
		ends[k-1] = j
		j = from[k][j]
	}
	return ends, best[n][s]
}

// hardInside: a mandatory break falls inside segs[i:j] (not after its last).
func hardInside(segs []seg, i, j int) bool {
	for k := i; k < j-1; k++ {
		if segs[k].hard {
			return true
		}
	}
	return false
}

// span is a byte range of a text.
type span struct{ from, to int }

// breakLines breaks text into the fewest lines of width columns, balanced, or into one line more
// (at most most lines; 0: no limit) when that costs less: when the fewest lines can only break
// inside a Chinese word ("过程中是什么体|验，"). It returns the byte range of each line (its
// trailing spaces and line break left out).
func breakLines(text string, segs []seg, width, most int) []span {
	if len(segs) == 0 {
		return nil
	}
	n := fillCount(segs, width)
	ends, cost := balance(text, segs, n, width)
	for ends == nil { // cannot happen: greedy's count fits; one more line is always safe
		n++
		ends, cost = balance(text, segs, n, width)
	}
	if more, c := balance(text, segs, n+1, width); more != nil && c < cost && (most == 0 || n+1 <= most) {
		ends = more
	}
	var out []span
	start := 0
	for _, e := range ends {
		out = append(out, span{segs[start].from, segs[start].from + len(strings.TrimRightFunc(text[segs[start].from:segs[e-1].to], unicode.IsSpace))})
		start = e
	}
	return out
}

// layout splits text into pages of at most lines lines of width columns: the lines of each page.
// Pages are balanced as the lines are (a page break prefers clause punctuation).
func layout(text string, width, lines int) [][]span {
	segs := segments(text, width)
	if len(segs) == 0 {
		return nil
	}
	if fillCount(segs, width) <= lines {
		return [][]span{breakLines(text, segs, width, lines)}
	}
	pageCols := width * lines
	total := groupWidth(segs, 0, len(segs))
	for n := max((total+pageCols-1)/pageCols, 2); n <= len(segs); n++ {
		ends, _ := balance(text, segs, n, pageCols)
		if ends == nil {
			continue
		}
		var pages [][]span
		start, fits := 0, true
		for _, e := range ends {
			page := segs[start:e]
			if fillCount(page, width) > lines {
				fits = false
				break
			}
			pages = append(pages, breakLines(text, page, width, lines))
			start = e
		}
		if fits {
			return pages
		}
	}
	return [][]span{breakLines(text, segs, width, 0)} // one segment a page could not fit: never here
}

// Wrap breaks s into balanced lines of about width columns (a wide character counts two) by the
// Unicode line-breaking rules, its own line breaks kept; at most maxLines lines (the rest is cut
// with an ellipsis; 0: no limit).
func Wrap(s string, width, maxLines int) string {
	var lines []string
	for _, l := range breakLines(s, segments(s, width), width, maxLines) {
		lines = append(lines, strings.TrimSpace(s[l.from:l.to]))
	}
	if maxLines > 0 && len(lines) > maxLines {
		lines = lines[:maxLines]
		lines[maxLines-1] += "…"
	}
	return strings.Join(lines, "\n")
}

// shownPage is a page of a caption as it is drawn: its lines (joined by "\n" in Text), when it is
// shown, and its words (as written on the page) with their times and byte ranges in Text.
type shownPage struct {
	Caption
	spans []span // of each of Words in Text
}

// shownPages are v's captions as Render draws them: each broken into pages of at most three lines
// of the frame's width, shown from its first word's time to the next page's; a caption without
// word times has its words spread over its time by their length.
func (v *Video) shownPages() []shownPage {
	width, lines := columns(v.Frame.W, fontSize(v.Frame)), 3
	var out []shownPage
	for _, c := range v.Captions {
		if strings.TrimSpace(c.Text) == "" || c.To <= c.From {
			continue
		}
		units := spokenUnits(c.Text)
		words := c.Words
		if len(words) != len(units) {
			words = spreadWords(c.Text, c.From, c.To)
		}
		pages := layout(c.Text, width, lines)
		first := len(out)
		w := 0 // the next word
		for _, page := range pages {
			var text strings.Builder
			var p shownPage
			// at maps a byte of c.Text on this page to its byte in the page's text.
			at := func(b int) int {
				off := 0
				for i, l := range page {
					if b < l.to || i == len(page)-1 {
						return off + min(max(b-l.from, 0), l.to-l.from)
					}
					off += l.to - l.from + 1
				}
				return off
			}
			for i, l := range page {
				if i > 0 {
					text.WriteByte('\n')
				}
				text.WriteString(c.Text[l.from:l.to])
			}
			p.Text = text.String()
			pageEnd := page[len(page)-1].to
			for ; w < len(units) && units[w].from < pageEnd; w++ {
				u := units[w]
				body := strings.TrimSpace(c.Text[u.from:u.to])
				from := u.from + strings.Index(c.Text[u.from:u.to], body)
				sp := span{at(from), at(min(from+len(body), pageEnd)-1) + 1} // the end of its last byte: not the next line's start
				p.Words = append(p.Words, Word{Text: p.Text[sp.from:sp.to], Start: words[w].Start, End: words[w].End})
				p.spans = append(p.spans, sp)
			}
			out = append(out, p)
		}
		// Times: the caption's start, then each page from its first word's start.
		for i := first; i < len(out); i++ {
			out[i].From = c.From
			if i > first && len(out[i].Words) > 0 {
				out[i].From = min(max(out[i].Words[0].Start, out[i-1].From), c.To)
			} else if i > first {
				out[i].From = out[i-1].From
			}
		}
		for i := first; i < len(out); i++ {
			out[i].To = c.To
			if i+1 < len(out) {
				out[i].To = out[i+1].From
			}
		}
		// A page with no time (its words said at once with the next's) is not shown.
		kept := out[:first]
		for _, p := range out[first:] {
			if p.To > p.From {
				kept = append(kept, p)
			}
		}
		out = kept
	}
	return out
}

// state is one picture of the caption track: a page with one word highlighted (-1: none) from
// From to To seconds.
type state struct {
	page     int
	word     int
	from, to float64
}

// captionStates are the pictures of pages in turn: each page once per word, the word highlighted
// from its start (the first from the page's) to the next word's start (the last to the page's end).
func captionStates(pages []shownPage, until float64) []state {
	var out []state
	for i, p := range pages {
		if len(p.Words) == 0 {
			out = append(out, state{i, -1, p.From, p.To})
			continue
		}
		for w := range p.Words {
			from, to := p.From, p.To
			if w > 0 {
				from = min(max(p.Words[w].Start, out[len(out)-1].from), p.To)
			}
			if w+1 < len(p.Words) {
				to = min(max(p.Words[w+1].Start, from), p.To)
			}
			out = append(out, state{i, w, from, to})
		}
	}
	// On the clock of the video, in whole milliseconds (the track's durations add up exactly).
	kept := out[:0]
	for _, s := range out {
		s.from, s.to = math.Round(min(s.from, until)*1000)/1000, math.Round(min(s.to, until)*1000)/1000
		if s.to > s.from {
			kept = append(kept, s)
		}
	}
	return kept
}

// yellowRamp is the palette of the highlight layer: index i is the highlight colour at opacity i,
// so a glyph's coverage mask is the picture's pixels as they are.
var yellowRamp = func() color.Palette {
	p := make(color.Palette, 256)
	for i := range p {
		a := uint32(i)
		p[i] = color.RGBA{R: uint8(uint32(highlight.R) * a / 255), G: uint8(uint32(highlight.G) * a / 255), B: uint8(uint32(highlight.B) * a / 255), A: uint8(a)}
	}
	return p
}()

// captionTracks draws v's captions as two tracks of pictures that ffmpeg's concat demuxer plays,
// each picture for its time: the pages (white text on its box, emoji in colour; a picture per
// page) and, over them, the highlight (the word being said in the highlight colour, nothing else;
// a picture per word). Every picture of a track has one size and pixel format (a change would
// reset ffmpeg's filter graph), and a clear one fills the time between captions. So all the
// captions are two inputs and two overlays, whatever their number. It returns the two lists' paths
// ("" when there are no captions).
//
// Speed (make bench's render row): a 30 s video has 80 to 200 words. A word's picture is a
// palette image of its glyphs' coverage, mostly empty: cheap to draw and to PNG-encode, where a
// full picture per word state cost about a CPU second for 30 s.
func (v *Video) captionTracks(work string, emoji *emojiFont) (pagesList, wordsList string, err error) {
	pages := v.shownPages()
	states := captionStates(pages, v.Duration)
	if len(states) == 0 {
		return "", "", nil
	}
	var all strings.Builder
	for _, p := range pages {
		all.WriteString(p.Text)
	}
	pt, err := newPainter(v.Font, all.String(), emoji, textStyle{size: fontSize(v.Frame), spacing: 10, pad: 16, box: color.NRGBA{A: 140}})
	if err != nil {
		return "", "", err
	}
	defer pt.close()
	cw, ch := 2, 2
	for _, p := range pages {
		w, h := pt.size(strings.Split(p.Text, "\n"))
		cw, ch = max(cw, w), max(ch, h)
	}
	// Where a page's box sits in the picture: centred.
	origin := func(p shownPage) image.Point {
		w, h := pt.size(strings.Split(p.Text, "\n"))
		return image.Pt((cw-w)/2, (ch-h)/2)
	}
	enc := &png.Encoder{CompressionLevel: png.BestSpeed}
	write := func(path string, img image.Image) error {
		f, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("render: caption picture: %w", err)
		}
		err = enc.Encode(f, img)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("render: caption picture: %w", err)
		}
		return nil
	}
	// The pictures are PNG-encoded on every core as they are drawn.
	type job struct {
		path string
		img  image.Image
	}
	jobs := make(chan job, runtime.NumCPU())
	errs := make(chan error, runtime.NumCPU())
	var wg sync.WaitGroup
	for range runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var first error
			for j := range jobs {
				if err := write(j.path, j.img); err != nil && first == nil {
					first = err
				}
			}
			errs <- first
		}()
	}
	bounds := image.Rect(0, 0, cw, ch)
	pageTrack := newTrack(filepath.Join(work, "caption-clear.png"))
	jobs <- job{pageTrack.clear, image.NewNRGBA(bounds)}
	wordTrack := newTrack(filepath.Join(work, "word-clear.png"))
	jobs <- job{wordTrack.clear, image.NewPaletted(bounds, yellowRamp)}
	shown := -1
	for i, s := range states {
		p := pages[s.page]
		if s.page != shown {
			img := image.NewRGBA(bounds)
			pt.draw(img, origin(p), p.Text, nil, color.White)
			path := filepath.Join(work, fmt.Sprintf("caption-%03d.png", s.page))
			jobs <- job{path, img}
			pageTrack.show(path, min(p.From, v.Duration), min(p.To, v.Duration))
			shown = s.page
		}
		if s.word < 0 {
			continue
		}
		mask := image.NewAlpha(bounds)
		pt.draw(mask, origin(p), p.Text, &p.spans[s.word], color.Opaque)
		path := filepath.Join(work, fmt.Sprintf("word-%04d.png", i))
		jobs <- job{path, &image.Paletted{Pix: mask.Pix, Stride: mask.Stride, Rect: bounds, Palette: yellowRamp}}
		wordTrack.show(path, s.from, s.to)
	}
	close(jobs)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return "", "", err
		}
	}
	if pagesList, err = pageTrack.write(filepath.Join(work, "captions.ffconcat"), v.Duration); err != nil {
		return "", "", err
	}
	if wordsList, err = wordTrack.write(filepath.Join(work, "words.ffconcat"), v.Duration); err != nil {
		return "", "", err
	}
	return pagesList, wordsList, nil
}

// track is the list of a concat demuxer's pictures, each shown for its time, the clear one
// between them.
type track struct {
	list  strings.Builder
	clear string
	last  string
	t     float64 // the end of the last picture listed
}

func newTrack(clear string) *track {
	t := &track{clear: clear, last: clear}
	t.list.WriteString("ffconcat version 1.0\n")
	return t
}

func (t *track) entry(path string, secs float64) {
	fmt.Fprintf(&t.list, "file '%s'\nduration %s\n", path, ff(secs))
	t.last = path
}

// show lists path from from to to (times in whole milliseconds), after the clear picture until
// from.
func (t *track) show(path string, from, to float64) {
	from, to = math.Round(from*1000)/1000, math.Round(to*1000)/1000
	if from > t.t {
		t.entry(t.clear, from-t.t)
	}
	if to > max(from, t.t) {
		t.entry(path, to-max(from, t.t))
		t.t = to
	}
}

// write ends the list with the clear picture until the end and writes it to path.
func (t *track) write(path string, end float64) (string, error) {
	if end > t.t {
		t.entry(t.clear, end-t.t)
	}
	// The concat demuxer shows the last file for no time unless it is listed again.
	fmt.Fprintf(&t.list, "file '%s'\n", t.last)
	if err := os.WriteFile(path, []byte(t.list.String()), 0o600); err != nil {
		return "", fmt.Errorf("render: caption list: %w", err)
	}
	return path, nil
}
