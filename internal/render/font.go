package render

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
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
// candidate draws and what to install.
func FontFor(text string, extra ...string) (string, error) {
	need := drawn(text)
	candidates := append(slices.Clone(extra), preferredFonts...)
	candidates = append(candidates, fontconfigFonts()...)
	seen := map[string]bool{}
	var best []rune // the fewest characters any font misses, to name them
	for _, f := range candidates {
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
		if best == nil || len(missing) < len(best) {
			best = missing
		}
	}
	if best == nil {
		best = need
	}
	if len(best) > 12 {
		best = best[:12]
	}
	return "", fmt.Errorf("%w: no font draws %q (%s); install a font for this script, e.g. Debian's fonts-noto-cjk for Chinese, Japanese and Korean",
		ErrNoFont, string(best), scriptsOf(best))
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

// FontProblems says what the installed fonts keep out of rendered text, for /health's
// capabilities (host/capability): nothing when a font draws Latin text.
func FontProblems() []string {
	if _, err := FontFor("Reelforge"); err != nil {
		return []string{"no installed font draws Latin letters: captions and titles cannot be drawn (install Debian's fonts-noto-cjk or fonts-dejavu-core)"}
	}
	return nil
}
