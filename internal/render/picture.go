package render

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/image/draw"
	"golang.org/x/image/font"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/font/sfnt"
	"golang.org/x/image/math/fixed"
)

// Text with colour emoji. ffmpeg's drawtext draws the outline glyphs of one font file; it cannot
// draw a colour bitmap font (Noto Color Emoji's glyphs are PNG pictures in its CBDT table, at one
// size) and refuses to load one. So a caption or title with emoji is drawn here into a PNG that the
// filter graph overlays: its letters with the text font (x/image/font/opentype), each emoji as the
// emoji font's own picture, scaled to the text.

// textStyle is how a text picture looks: white letters of size pixels, lines spacing apart, on a
// box of colour box (nil: none) reaching pad pixels beyond the text.
type textStyle struct {
	size, spacing, pad int
	box                color.Color
}

// textPicture draws the lines of text (centred) into a PNG file: letters from fontFile, the
// characters of emoji from the emoji font. It returns the file and the picture's size.
func textPicture(path, text, fontFile string, emoji *emojiFont, st textStyle) (w, h int, err error) {
	p, err := newPainter(fontFile, text, emoji, st)
	if err != nil {
		return 0, 0, err
	}
	defer p.close()
	w, h = p.size(strings.Split(text, "\n"))
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	p.draw(img, image.Point{}, text, nil, color.White)
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return 0, 0, fmt.Errorf("render: text picture: %w", err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		return 0, 0, fmt.Errorf("render: text picture: %w", err)
	}
	return w, h, nil
}

// painter draws texts of one style with one font face: the face that lacks the fewest characters
// of the text it was made for (of the font file's collection), and the emoji font's pictures.
type painter struct {
	file          *os.File
	face          font.Face
	ascent, lineH int
	emojiW        int
	emoji         *emojiFont
	st            textStyle
}

func newPainter(fontFile, text string, emoji *emojiFont, st textStyle) (*painter, error) {
	f, err := os.Open(fontFile)
	if err != nil {
		return nil, fmt.Errorf("render: font: %w", err)
	}
	fail := func(err error) (*painter, error) {
		f.Close()
		return nil, err
	}
	// The face reads its glyphs from the file as it draws: the file stays open until close.
	coll, err := opentype.ParseCollectionReaderAt(f)
	if err != nil {
		return fail(fmt.Errorf("render: font %s: %w", filepath.Base(fontFile), err))
	}
	sf, err := bestFace(coll, drawn(text))
	if err != nil {
		return fail(err)
	}
	face, err := opentype.NewFace(sf, &opentype.FaceOptions{Size: float64(st.size), DPI: 72, Hinting: font.HintingNone})
	if err != nil {
		return fail(fmt.Errorf("render: font face: %w", err))
	}
	m := face.Metrics()
	// Noto's emoji pictures are 136 x 128 pixels at 109 ppem.
	return &painter{file: f, face: face, ascent: m.Ascent.Ceil(), lineH: (m.Ascent + m.Descent).Ceil(), emojiW: st.size * 5 / 4, emoji: emoji, st: st}, nil
}

func (p *painter) close() {
	p.face.Close()
	p.file.Close()
}

// width is a line's width in pixels.
func (p *painter) width(line string) int {
	var adv fixed.Int26_6
	for _, r := range line {
		if p.emoji.has(r) {
			adv += fixed.I(p.emojiW)
		} else if a, ok := p.face.GlyphAdvance(r); ok {
			adv += a
		}
	}
	return adv.Ceil()
}

// size is the size of the picture of lines: the text and its padding.
func (p *painter) size(lines []string) (w, h int) {
	textW := 0
	for _, l := range lines {
		textW = max(textW, p.width(l))
	}
	return textW + 2*p.st.pad, len(lines)*p.lineH + (len(lines)-1)*p.st.spacing + 2*p.st.pad
}

// draw draws text (its lines centred) in colour c on its box at the top left corner at of img.
// With only, it draws just the characters of that byte range of text (no box, no emoji): a layer
// over the whole, such as the highlighted word.
func (p *painter) draw(img draw.Image, at image.Point, text string, only *span, c color.Color) {
	lines := strings.Split(text, "\n")
	w, h := p.size(lines)
	if p.st.box != nil && only == nil {
		draw.Draw(img, image.Rect(at.X, at.Y, at.X+w, at.Y+h), image.NewUniform(p.st.box), image.Point{}, draw.Src)
	}
	textW := w - 2*p.st.pad
	d := &font.Drawer{Dst: img, Src: image.NewUniform(c), Face: p.face}
	off := 0
	for i, l := range lines {
		top := at.Y + p.st.pad + i*(p.lineH+p.st.spacing)
		d.Dot = fixed.P(at.X+p.st.pad+(textW-p.width(l))/2, top+p.ascent)
		for j, r := range l {
			skip := only != nil && (off+j < only.from || off+j >= only.to)
			if pic := p.emoji.picture(r); pic != nil {
				if only == nil {
					x := d.Dot.X.Round()
					size := p.st.size * 9 / 8
					rect := image.Rect(x, top+(p.lineH-size)/2, x+p.emojiW, top+(p.lineH-size)/2+size)
					draw.CatmullRom.Scale(img, rect, pic, pic.Bounds(), draw.Over, nil)
				}
				d.Dot.X += fixed.I(p.emojiW)
				continue
			}
			if skip {
				if a, ok := p.face.GlyphAdvance(r); ok {
					d.Dot.X += a
				}
				continue
			}
			d.DrawString(string(r))
		}
		off += len(l) + 1
	}
}

// bestFace is the font of a collection that lacks the fewest of need.
func bestFace(c *opentype.Collection, need []rune) (*sfnt.Font, error) {
	var best *sfnt.Font
	fewest := -1
	var buf sfnt.Buffer
	for i := range c.NumFonts() {
		f, err := c.Font(i)
		if err != nil {
			continue
		}
		n := 0
		for _, r := range need {
			if g, err := f.GlyphIndex(&buf, r); err != nil || g == 0 {
				n++
			}
		}
		if fewest < 0 || n < fewest {
			best, fewest = f, n
		}
	}
	if best == nil {
		return nil, errors.New("render: empty font collection")
	}
	return best, nil
}

// emojiFont is a colour bitmap font (CBDT/CBLC, as Noto Color Emoji): a PNG picture per glyph.
// Only the characters it was opened for (want) are drawn from it. A nil *emojiFont has none.
type emojiFont struct {
	font       *sfnt.Font
	cblc, cbdt []byte
	want       map[rune]bool
	pics       map[rune]image.Image
}

// openEmoji reads the colour bitmap font at path, to draw the characters of want.
func openEmoji(path string, want []rune) (*emojiFont, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("render: emoji font: %w", err)
	}
	f, err := sfnt.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("render: emoji font %s: %w", filepath.Base(path), err)
	}
	e := &emojiFont{font: f, want: map[rune]bool{}, pics: map[rune]image.Image{}}
	e.cblc, e.cbdt = table(data, "CBLC"), table(data, "CBDT")
	if e.cblc == nil || e.cbdt == nil {
		return nil, fmt.Errorf("render: %s has no colour bitmaps (CBLC/CBDT)", filepath.Base(path))
	}
	for _, r := range want {
		e.want[r] = true
	}
	return e, nil
}

func (e *emojiFont) has(r rune) bool { return e != nil && e.want[r] }

// picture is the PNG picture of r, nil when r is not one to draw from this font or it has none.
func (e *emojiFont) picture(r rune) image.Image {
	if !e.has(r) {
		return nil
	}
	if p, ok := e.pics[r]; ok {
		return p
	}
	var p image.Image
	var buf sfnt.Buffer
	if g, err := e.font.GlyphIndex(&buf, r); err == nil && g != 0 {
		if raw := e.glyphPNG(uint16(g)); raw != nil {
			p, _ = png.Decode(bytes.NewReader(raw))
		}
	}
	e.pics[r] = p
	return p
}

// has reports whether the font has a picture for glyph g (of its first strike).
func (e *emojiFont) hasGlyph(r rune) bool {
	var buf sfnt.Buffer
	g, err := e.font.GlyphIndex(&buf, r)
	return err == nil && g != 0 && e.glyphPNG(uint16(g)) != nil
}

// glyphPNG finds glyph g's PNG data in the first strike of CBLC/CBDT (OpenType's "CBDT" spec:
// index subtable formats 1, 3 and 4; glyph data formats 17, 18 and 19), nil when absent.
func (e *emojiFont) glyphPNG(g uint16) []byte {
	be := binary.BigEndian
	blc, bdt := e.cblc, e.cbdt
	if len(blc) < 8+48 || be.Uint32(blc[4:]) == 0 {
		return nil
	}
	size := blc[8:]
	arrayOff, n := int(be.Uint32(size[0:])), int(be.Uint32(size[8:]))
	for i := range n {
		at := arrayOff + i*8
		if at+8 > len(blc) {
			return nil
		}
		first, last, extra := be.Uint16(blc[at:]), be.Uint16(blc[at+2:]), int(be.Uint32(blc[at+4:]))
		if g < first || g > last {
			continue
		}
		sub := arrayOff + extra
		if sub+8 > len(blc) {
			return nil
		}
		indexFormat, imageFormat, dataOff := be.Uint16(blc[sub:]), be.Uint16(blc[sub+2:]), int(be.Uint32(blc[sub+4:]))
		var start, end int
		k := int(g - first)
		switch indexFormat {
		case 1:
			o := sub + 8 + k*4
			if o+8 > len(blc) {
				return nil
			}
			start, end = int(be.Uint32(blc[o:])), int(be.Uint32(blc[o+4:]))
		case 3:
			o := sub + 8 + k*2
			if o+4 > len(blc) {
				return nil
			}
			start, end = int(be.Uint16(blc[o:])), int(be.Uint16(blc[o+2:]))
		case 4:
			if sub+12 > len(blc) {
				return nil
			}
			num := int(be.Uint32(blc[sub+8:]))
			for j := range num {
				o := sub + 12 + j*4
				if o+8 > len(blc) {
					return nil
				}
				if be.Uint16(blc[o:]) == g {
					start, end = int(be.Uint16(blc[o+2:])), int(be.Uint16(blc[o+6:]))
					break
				}
			}
		default:
			return nil
		}
		if end <= start || dataOff+end > len(bdt) {
			return nil
		}
		glyph := bdt[dataOff+start : dataOff+end]
		skip := map[uint16]int{17: 5, 18: 8, 19: 0}
		s, ok := skip[imageFormat]
		if !ok || len(glyph) < s+4 {
			return nil
		}
		length := int(be.Uint32(glyph[s:]))
		if s+4+length > len(glyph) {
			return nil
		}
		return glyph[s+4 : s+4+length]
	}
	return nil
}

// table returns the bytes of an OpenType font's table tag, nil when absent.
func table(data []byte, tag string) []byte {
	be := binary.BigEndian
	if len(data) < 12 {
		return nil
	}
	n := int(be.Uint16(data[4:]))
	for i := range n {
		rec := 12 + i*16
		if rec+16 > len(data) {
			return nil
		}
		if string(data[rec:rec+4]) == tag {
			off, length := int(be.Uint32(data[rec+8:])), int(be.Uint32(data[rec+12:]))
			if off+length > len(data) {
				return nil
			}
			return data[off : off+length]
		}
	}
	return nil
}
