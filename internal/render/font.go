package render

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"golang.org/x/image/font/sfnt"
)

// ErrNoFont is the cause of a render refused because no installed font draws every character of
// its text: drawtext would draw boxes in their place.
var ErrNoFont = errors.New("render: no installed font covers the text")

// preferredFonts are tried first, in order: Noto Sans CJK (Debian fonts-noto-cjk) covers Chinese,
// Japanese, Korean and Latin; the others are common fallbacks.
var preferredFonts = []string{
	"/usr/share/fonts/opentype/noto/NotoSansCJK-Bold.ttc",
	"/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
	"/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
	"/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc",
	"/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf",
	"/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf",
	"/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
	"/usr/share/fonts/TTF/DejaVuSans.ttf",
}

// FontFor returns a font file that has a glyph for every character of text that is drawn (not
// white space or a control character): first of extra (an operator's choice), then of the
// preferred fonts, then of every font fontconfig lists. A path unsafe inside an ffmpeg filter graph
// is skipped. Without one it returns an error wrapping ErrNoFont that names the characters no
// candidate draws and the Debian package that has a font for them. (A render uses Cover, which
// leaves such characters out rather than fail.)
func FontFor(text string, extra ...string) (string, error) {
	f, missing := bestFont(drawn(text), extra)
	if f != "" && len(missing) == 0 {
		return f, nil
	}
	if f == "" {
		missing = drawn(text)
	}
	return "", noFont(missing)
}

// noFont is the error of characters no installed font draws, naming the package to install.
func noFont(missing []rune) error {
	if len(missing) > 12 {
		missing = missing[:12]
	}
	return fmt.Errorf("%w: no font draws %q (%s); install %s", ErrNoFont, string(missing), scriptsOf(missing), fontPackage(missing))
}

// fontPackage is the Debian package with a font for the characters rs.
func fontPackage(rs []rune) string {
	cjk, emoji := 0, 0
	for _, r := range rs {
		switch {
		case unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul, unicode.Bopomofo):
			cjk++
		case pictograph(r):
			emoji++
		}
	}
	switch {
	case cjk == len(rs):
		return "Debian's fonts-noto-cjk (Chinese, Japanese and Korean)"
	case emoji == len(rs):
		return "Debian's fonts-noto-color-emoji (emoji)"
	}
	return "a font for this script (Debian's fonts-noto-core and fonts-noto-extra cover most scripts)"
}

// bestFont is the candidate font (extra, the preferred fonts, fontconfig's) that lacks the fewest
// of need, and the characters it lacks; "" when no font could be read.
func bestFont(need []rune, extra []string) (string, []rune) {
	seen := map[string]bool{}
	best, bestMissing := "", []rune(nil)
	// fontconfig is asked (a process) only when no known font draws everything.
	for _, candidates := range []func() []string{
		func() []string { return append(slices.Clone(extra), preferredFonts...) }, fontconfigFonts,
	} {
		for _, f := range candidates() {
			if f == "" || seen[f] || strings.ContainsAny(f, `:,;'[]\ `) {
				continue
			}
			seen[f] = true
			missing, err := missingGlyphs(f, need)
			if err != nil {
				continue
			}
			if len(missing) == 0 {
				return f, nil
			}
			if best == "" || len(missing) < len(bestMissing) {
				best, bestMissing = f, missing
			}
		}
	}
	return best, bestMissing
}

// emojiFonts are colour emoji fonts (CBDT/CBLC bitmaps): Debian's fonts-noto-color-emoji.
var emojiFonts = []string{"/usr/share/fonts/truetype/noto/NotoColorEmoji.ttf"}

// EmojiFont is the installed colour emoji font, "" when there is none.
func EmojiFont() string {
	for _, f := range emojiFonts {
		if st, err := os.Stat(f); err == nil && st.Mode().IsRegular() {
			return f
		}
	}
	return ""
}

// Glyphs is how the characters of a text are drawn with the installed fonts (Cover).
type Glyphs struct {
	Font      string // the font of every drawn character but Emoji and Dropped
	EmojiFont string // the colour emoji font ("" when none is installed)
	Emoji     []rune // characters drawn in colour from EmojiFont
	Dropped   []rune // characters no installed font draws: left out of the text (Strip)
}

// Cover finds how text is drawn: emoji and symbols in colour from the emoji font where it has them,
// every other character from one text font (FontFor's candidates, extra first), and the characters
// no font has are dropped. It fails (ErrNoFont) only when no font can be read at all.
func Cover(text string, extra ...string) (Glyphs, error) {
	var g Glyphs
	var emoji *emojiFont
	if g.EmojiFont = EmojiFont(); g.EmojiFont != "" {
		emoji, _ = openEmoji(g.EmojiFont, nil) // unreadable: as if not installed
	}
	var rest []rune
	for _, r := range drawn(text) {
		switch {
		case zeroWidth(r):
		case pictograph(r) && emoji != nil && emoji.hasGlyph(r):
			g.Emoji = append(g.Emoji, r)
		default:
			rest = append(rest, r)
		}
	}
	var missing []rune
	if g.Font, missing = bestFont(rest, extra); g.Font == "" {
		return Glyphs{}, fmt.Errorf("%w: no font could be read; install Debian's fonts-noto-cjk or fonts-dejavu-core", ErrNoFont)
	}
	for _, r := range missing {
		if emoji != nil && emoji.hasGlyph(r) {
			g.Emoji = append(g.Emoji, r)
		} else {
			g.Dropped = append(g.Dropped, r)
		}
	}
	return g, nil
}

// Strip is text without the characters g drops and without the joiners and selectors of emoji
// sequences (each emoji of a sequence is drawn on its own).
func (g Glyphs) Strip(text string) string {
	return strings.Map(func(r rune) rune {
		if zeroWidth(r) || slices.Contains(g.Dropped, r) {
			return -1
		}
		return r
	}, text)
}

// Note says which characters were left out and why, for a result; "" when none were.
func (g Glyphs) Note() string {
	if len(g.Dropped) == 0 {
		return ""
	}
	return fmt.Sprintf("left out of the text: %q (%s), which no installed font draws; install %s",
		string(g.Dropped), scriptsOf(g.Dropped), fontPackage(g.Dropped))
}

// zeroWidth: the characters that join emoji or select their form (ZWJ, variation selectors, the
// keycap mark); not drawn on their own.
func zeroWidth(r rune) bool { return r == 0x200D || r == 0xFE0E || r == 0xFE0F || r == 0x20E3 }

// pictograph: the blocks of emoji and pictographic symbols, drawn in colour from the emoji font
// when it has them even where a text font has a plain glyph (☕ is in DejaVu too).
func pictograph(r rune) bool {
	return r >= 0x2300 && r <= 0x23FF || r >= 0x2600 && r <= 0x27BF || r >= 0x2B00 && r <= 0x2BFF || r >= 0x1F000 && r <= 0x1FAFF
}

// drawn is the distinct characters of text a font must have glyphs for.
func drawn(text string) []rune {
	var out []rune
	seen := map[rune]bool{}
	for _, r := range text {
		if unicode.IsSpace(r) || unicode.IsControl(r) || seen[r] {
			continue
		}
		seen[r] = true
		out = append(out, r)
	}
	return out
}

// missingGlyphs returns the runes of need that the font file (any font of a collection) lacks.
func missingGlyphs(path string, need []rune) ([]rune, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c, err := sfnt.ParseCollectionReaderAt(f)
	if err != nil {
		return nil, err
	}
	var buf sfnt.Buffer
	var best []rune
	for i := range c.NumFonts() {
		font, err := c.Font(i)
		if err != nil {
			continue
		}
		var missing []rune
		for _, r := range need {
			if g, err := font.GlyphIndex(&buf, r); err != nil || g == 0 {
				missing = append(missing, r)
			}
		}
		if best == nil || len(missing) < len(best) {
			best = missing
			if len(best) == 0 {
				break
			}
		}
	}
	if best == nil && c.NumFonts() == 0 {
		return nil, errors.New("render: empty font collection")
	}
	return best, nil
}

// fontconfigFonts lists the font files fontconfig knows (none when fc-list is not installed).
func fontconfigFonts() []string {
	out, err := exec.Command("fc-list", "--format", "%{file}\n").Output()
	if err != nil {
		return nil
	}
	var files []string
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); strings.HasSuffix(l, ".ttf") || strings.HasSuffix(l, ".ttc") || strings.HasSuffix(l, ".otf") {
			files = append(files, l)
		}
	}
	slices.Sort(files)
	return files
}

// scriptsOf names the Unicode scripts of rs, for the error message.
func scriptsOf(rs []rune) string {
	var names []string
	for _, r := range rs {
		name := "other"
		for n, t := range unicode.Scripts {
			if unicode.Is(t, r) {
				name = n
				break
			}
		}
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return strings.Join(names, ", ")
}

// fontProblems keeps FontProblems' answer for a minute: reading the fonts takes milliseconds, and
// /health, which shows it, is open to anyone. An installed font shows within the minute.
var fontProblems struct {
	sync.Mutex
	at   time.Time
	list []string
}

// FontProblems says what the installed fonts keep out of rendered text, for /health's
// capabilities (host/capability): nothing when a font draws Latin text and a colour emoji font is
// installed.
func FontProblems() []string {
	fontProblems.Lock()
	defer fontProblems.Unlock()
	if !fontProblems.at.IsZero() && time.Since(fontProblems.at) < time.Minute {
		return slices.Clone(fontProblems.list)
	}
	var out []string
	if _, err := FontFor("Reelforge"); err != nil {
		out = append(out, "no installed font draws Latin letters: captions and titles cannot be drawn (install Debian's fonts-noto-cjk or fonts-dejavu-core)")
	}
	if EmojiFont() == "" {
		out = append(out, "no colour emoji font: emoji are left out of captions and titles (install Debian's fonts-noto-color-emoji)")
	}
	fontProblems.at, fontProblems.list = time.Now(), out
	return slices.Clone(out)
}
