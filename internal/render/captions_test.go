package render

import (
	"encoding/binary"
	"image"
	"iter"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/rivo/uniseg"

	"github.com/reelforge/reelforge/internal/testtool"
	"github.com/reelforge/reelforge/internal/zhwords"
)

// TestLayout: long captions in English and Chinese are broken into pages of at most three lines
// that fit, no word is split, no line starts with closing punctuation, and no line of a page is an
// orphan (every line holds at least a third of the width).
func TestLayout(t *testing.T) {
	t.Parallel()
	const width = 22
	tests := []string{
		"Grind your beans fresh every morning for a cleaner, brighter cup that tastes of the fruit rather than the roast, and you will never go back to the old jar of pre-ground coffee.",
		"手冲咖啡的三个理由，让你爱上每一个早晨，第一，新鲜研磨的咖啡豆香气更浓，口感更干净，而且你可以根据自己的口味调整研磨度和水温。",
		"第一个理由是香气更浓郁而且每天早上都能喝到一杯手冲咖啡。",
		"一杯好咖啡，从手冲咖啡开始。",
		"Honestly, most people never notice the difference ☕🔥 until they try it side by side.",
	}
	for _, text := range tests {
		var all []string
		for l := range laidOut(text, width) {
			if l.span == l.page[0] && len(l.page) > 3 {
				t.Errorf("%q: a page of %d lines", text, len(l.page))
			}
			all = append(all, l.line)
			if w := uniseg.StringWidth(l.line); w > width || len(l.page) > 1 && w < width/3 {
				t.Errorf("%q: line %q is %d columns wide, want %d to %d", text, l.line, w, width/3, width)
			}
			if first := []rune(l.line)[0]; strings.ContainsRune("，。、！？；：”）,.;:!?", first) {
				t.Errorf("%q: line %q starts with punctuation", text, l.line)
			}
		}
		// Nothing lost, and a line ends only where a word does: at a space, or between two
		// ideographs (or after punctuation) in Chinese.
		joined := strings.Join(all, "\x00")
		if strings.ReplaceAll(strings.ReplaceAll(joined, "\x00", " "), " ", "") != strings.ReplaceAll(text, " ", "") {
			t.Errorf("%q laid out as %q: text lost", text, all)
		}
		for i := 1; i < len(all); i++ {
			prev, next := []rune(all[i-1]), []rune(all[i])
			a, b := prev[len(prev)-1], next[0]
			if unicode.IsLetter(a) && unicode.IsLetter(b) && !ideograph(a) && !ideograph(b) && !strings.Contains(text, all[i-1]+" "+all[i][:1]) {
				t.Errorf("%q: a word split between %q and %q", text, all[i-1], all[i])
			}
		}
		if len(all) == 0 {
			t.Errorf("%q: no lines", text)
		}
	}
	// The orphan: a caption a little longer than a line is two lines of about even length
	// (not a full line and "啡。").
	for text, width := range map[string]int{"今天我们来聊聊让你爱上手冲咖啡的三个理由。": 36, "Coffee, made simple: a short guide for busy people": 28} {
		lines := strings.Split(Wrap(text, width, 0), "\n")
		if len(lines) != 2 || uniseg.StringWidth(lines[0]) < width/3 || uniseg.StringWidth(lines[1]) < width/3 {
			t.Errorf("Wrap(%q, %d) = %q, want two lines of at least %d columns", text, width, lines, width/3)
		}
	}
}

// laidLine is a line of a caption as layout breaks it.
type laidLine struct {
	span        // the line's bytes in the caption
	line string // its text
	page []span // the lines of its page
}

// laidOut yields the lines layout breaks text into at width (in columns), three lines a page as
// the captions have them, page by page.
func laidOut(text string, width int) iter.Seq[laidLine] {
	return func(yield func(laidLine) bool) {
		for _, page := range layout(text, width, 3) {
			for _, l := range page {
				if !yield(laidLine{l, text[l.from:l.to], page}) {
					return
				}
			}
		}
	}
}

// TestLayoutKeepsTheDashWithItsClause: no line opens with a dash (UAX #14 allows a break before
// one; a creator's video showed "— change them, and" as a line of its own start).
func TestLayoutKeepsTheDashWithItsClause(t *testing.T) {
	t.Parallel()
	texts := []string{
		"Start with the conditions — change them, and everything else changes too.",
		"Reason 1: It saves time — once the routine is set, it runs almost on its own.",
		"Doing everything at once — pick one change and make it stick first.",
	}
	for _, width := range []int{22, 31, 40} {
		for _, text := range texts {
			for l := range laidOut(text, width) {
				if strings.HasPrefix(l.line, "—") {
					t.Errorf("layout(%q, %d): the line %q opens with a dash", text, width, l.line)
				}
			}
		}
	}
}

// TestLayoutKeepsAWordWithItsClause: no line break parts one word from the rest of its clause,
// leaving it alone at the start of the next line ("人，多了共同话题。", "this, and share it with")
// or at the end of a line ("behind each step, the"), as a creator's videos showed at 9:16, 3:4 and
// 16:9; the break goes at the clause's punctuation instead.
func TestLayoutKeepsAWordWithItsClause(t *testing.T) {
	t.Parallel()
	texts := []string{
		"它让你认识同样喜欢它的人，多了共同话题。",
		"它很宽容，小小的失误不会毁掉结果。",
		"Follow for more like this, and share it with a friend who needs it!",
		"Once you see the reason behind each step, the whole thing makes sense.",
	}
	endsClause := func(s string) bool {
		last, _ := utf8.DecodeLastRuneInString(strings.TrimSpace(s))
		return strings.ContainsRune(clausePunct, last)
	}
	for _, f := range []Frame{{1080, 1920}, {1080, 1440}, {1920, 1080}, {720, 1280}} {
		width := columns(f.W, fontSize(f))
		for _, text := range texts {
			units := spokenUnits(text)
			var lines []string
			var words [][]string // each line's words
			for l := range laidOut(text, width) {
				lines = append(lines, l.line)
				var in []string
				for _, u := range units {
					if u.from >= l.from && u.from < l.to {
						in = append(in, unitText(text, u))
					}
				}
				words = append(words, in)
			}
			for i := 1; i < len(lines); i++ {
				if endsClause(lines[i-1]) {
					continue
				}
				if next := words[i]; len(next) > 1 && endsClause(next[0]) {
					t.Errorf("%v: %q broken as %q: %q is parted from its clause", f, text, lines, next[0])
				}
				if prev := words[i-1]; len(prev) > 1 && endsClause(prev[len(prev)-2]) {
					t.Errorf("%v: %q broken as %q: %q is parted from its clause", f, text, lines, prev[len(prev)-1])
				}
			}
		}
	}
}

// TestLayoutKeepsAnArticleWithItsNoun: no line ends with "a", "an" or "the" where the noun could
// come along ("and share it with a | friend who needs it!" was a creator's 9:16 caption).
func TestLayoutKeepsAnArticleWithItsNoun(t *testing.T) {
	t.Parallel()
	texts := []string{
		"Follow for more like this, and share it with a friend who needs it!",
		"Keep the tools you need within reach, and put the rest away.",
		"Ask someone who does it well what they wish they had known sooner about the basics.",
	}
	for _, f := range []Frame{{1080, 1920}, {1080, 1080}, {1920, 1080}, {720, 1280}} {
		width := columns(f.W, fontSize(f))
		for _, text := range texts {
			for l := range laidOut(text, width) {
				words := strings.Fields(l.line)
				if last := strings.ToLower(words[len(words)-1]); l.to < len(text) && (last == "a" || last == "an" || last == "the") {
					t.Errorf("%v: %q has the line %q, ending with an article", f, text, l.line)
				}
			}
		}
	}
}

func TestSpokenUnits(t *testing.T) {
	t.Parallel()
	text := "“Hello, world” ☕ it's 3 手冲咖啡。"
	var got []string
	for _, u := range spokenUnits(text) {
		got = append(got, unitText(text, u))
	}
	want := []string{"“Hello,", "world” ☕", "it's", "3", "手", "冲", "咖啡。"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("spokenUnits (-want +got):\n%s", diff)
	}
}

// TestAlignWords: in a sentence whose audio has a pause where its comma is, the words before the
// comma end at the pause and the word after it starts when the voice resumes.
func TestAlignWords(t *testing.T) {
	t.Parallel()
	const rate = 1000
	var pcm []byte
	add := func(secs float64, level int16) {
		for i := range int(secs * rate) {
			v := level
			if i%2 == 1 {
				v = -level
			}
			pcm = binary.LittleEndian.AppendUint16(pcm, uint16(v))
		}
	}
	add(0.1, 0)    // leading silence
	add(1.0, 8000) // "alpha beta,"
	add(0.05, 0)   // a stop consonant: too short to be a pause
	add(0.2, 8000) //
	add(0.3, 0)    // the comma's pause
	add(0.5, 8000) // "gamma."
	add(0.25, 0)   // trailing silence
	words := alignWords("alpha beta, gamma.", pcm, rate, 1, 16, 10)
	// By length within the clause: alpha 5 letters of 9 of the 1.25 s said before the pause.
	want := []Word{{"alpha", 10.1, 10.794}, {"beta,", 10.794, 11.35}, {"gamma.", 11.65, 12.15}}
	approx := cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 0.002 })
	if diff := cmp.Diff(want, words, approx); diff != "" {
		t.Errorf("alignWords (-want +got):\n%s", diff)
	}
}

var cueTimestamp = regexp.MustCompile(`<(\d\d):(\d\d):(\d\d)\.(\d\d\d)>`)

// TestWebVTTWordCues: a page's words are in its cue with their times, read back from the file,
// and the text around them is the page's text (escaped).
func TestWebVTTWordCues(t *testing.T) {
	t.Parallel()
	v := &Video{Frame: Frame{1080, 1920}, Duration: 12, Captions: []Caption{
		{Text: "Fish & chips <3 taste better by the sea, with a cold drink and an old friend to talk to.", From: 1, To: 6},
		{Text: "手冲咖啡的三个理由。", From: 6, To: 9},
	}}
	shown := v.ShownCaptions()
	vtt := WebVTT(shown)
	blocks := strings.Split(strings.TrimPrefix(vtt, "WEBVTT\n\n"), "\n\n")
	if len(blocks) != len(shown) {
		t.Fatalf("%d cues for %d pages:\n%s", len(blocks), len(shown), vtt)
	}
	for i, b := range blocks {
		lines := strings.SplitN(strings.TrimSpace(b), "\n", 3)
		text := lines[2]
		var times []float64
		for _, m := range cueTimestamp.FindAllStringSubmatch(text, -1) {
			h, _ := strconv.Atoi(m[1])
			mi, _ := strconv.Atoi(m[2])
			s, _ := strconv.Atoi(m[3])
			ms, _ := strconv.Atoi(m[4])
			times = append(times, float64(h*3600+mi*60+s)+float64(ms)/1000)
		}
		plain := strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">").Replace(cueTimestamp.ReplaceAllString(text, ""))
		if plain != shown[i].Text {
			t.Errorf("cue %d reads %q, want %q", i+1, plain, shown[i].Text)
		}
		// Every word after the cue's first has its time (the first starts with the cue).
		var want []float64
		for j, w := range shown[i].Words {
			if j > 0 || w.Start > shown[i].From+0.0005 {
				want = append(want, math.Round(w.Start*1000)/1000)
			}
		}
		if diff := cmp.Diff(want, times, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-6 })); diff != "" || len(times) == 0 {
			t.Errorf("cue %d word times (-want +got):\n%s\n%s", i+1, diff, b)
		}
	}
	if !strings.Contains(vtt, "&amp; <") && !strings.Contains(vtt, "&amp;") {
		t.Errorf("markup not escaped:\n%s", vtt)
	}
}

// TestCaptionHighlightMoves renders a caption of two words on real ffmpeg: in a frame while the
// first is said the highlight colour is left of the middle, while the second is said right of it.
func TestCaptionHighlightMoves(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ffmpeg")
	}
	testtool.Need(t, "ffmpeg")
	t.Parallel()
	font, err := FontFor("Coffee time ☕")
	if err != nil {
		testtool.Missing(t, err.Error())
	}
	dir := t.TempDir()
	if d := os.Getenv("CAPTIONS_TEST_DIR"); d != "" {
		dir = d // keep the frames to look at
	}
	v := &Video{Out: filepath.Join(dir, "v.mp4"), Frame: Frame{360, 640}, Duration: 2, Font: font,
		Shots:    []Shot{{Kind: ShotTitle, Duration: 2}},
		Captions: []Caption{{Text: "Coffee time ☕", From: 0, To: 2, Words: []Word{{"Coffee", 0, 1}, {"time ☕", 1, 2}}}}}
	if e := EmojiFont(); e != "" {
		v.EmojiFont, v.Emoji = e, []rune("☕")
	}
	if err := v.Render(t.Context()); err != nil {
		t.Fatal(err)
	}
	// The centre of the highlighted pixels, as a share of the frame's width.
	centre := func(at string) float64 {
		out := filepath.Join(dir, "f"+at+".png")
		ffmpegOK(t, "the frame at "+at+" s", "-ss", at, "-i", v.Out, "-frames:v", "1", out)
		img := readPNG(t, out)
		sum, n := 0, 0
		b := img.Bounds()
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				if isHighlight(img, x, y) {
					sum += x
					n++
				}
			}
		}
		if n < 20 {
			t.Fatalf("frame at %s s has %d highlighted pixels, want a highlighted word", at, n)
		}
		return float64(sum) / float64(n) / float64(b.Dx())
	}
	first, second := centre("0.5"), centre("1.5")
	if first >= 0.5 || second <= 0.5 {
		t.Errorf("highlight centred at %.2f then %.2f of the width, want left of the middle then right of it", first, second)
	}
}

// isHighlight: the pixel is about the highlight colour (after the video's encoding).
func isHighlight(img image.Image, x, y int) bool {
	r, g, b, _ := img.At(x, y).RGBA()
	return r>>8 > 200 && g>>8 > 160 && b>>8 < 110
}

// TestLayoutChineseWords: long Chinese captions (the ones the issue and a creator's run showed
// broken as "流程一|旦", "比速|溶", "小细|节") break between words at the frames' widths: no line
// ends inside a word of the dictionary (internal/zhwords), and none is an orphan of a third of the
// width or less.
func TestLayoutChineseWords(t *testing.T) {
	t.Parallel()
	captions := []string{
		"第一个理由：它省时间，流程一旦固定下来，几乎不用多想。",
		"为什么手冲咖啡比速溶咖啡更好喝？🤔",
		"简单说：原因往往藏在几个小细节里，而且每一个都不难改。",
		"三个理由让你爱上手冲咖啡，我们一条一条来看。☕️",
		"宇航员在失重的太空里睡觉时，会把睡袋固定在墙上，以免飘来飘去撞到设备。",
		"新鲜研磨的咖啡豆香气更浓郁，口感更干净，而且你可以根据自己的口味调整研磨度和水温。",
		// Two lines fit only by "什么体|验": three lines are better.
		"还有人的感受：过程中是什么体验，大家又是怎么让它更轻松的。",
		"工具也很重要，每一样都解决了一个你可能没想到的问题。",
		"很多人想象的是一种样子，真正的答案要从它所处的条件说起。",
	}
	for _, f := range []Frame{{1080, 1920}, {1920, 1080}, {720, 1280}, {1080, 1080}} {
		width := columns(f.W, fontSize(f))
		for _, text := range captions {
			inside := zhwords.Inside(text)
			for l := range laidOut(text, width) {
				if l.to < len(text) && inside[l.to] {
					t.Errorf("%v: %q breaks inside a word after %q", f, text, l.line)
				}
				if w := uniseg.StringWidth(l.line); len(l.page) > 1 && w <= width/3 {
					t.Errorf("%v: %q has the orphan line %q (%d of %d columns)", f, text, l.line, w, width)
				}
			}
		}
	}
}

var (
	silenceStart = regexp.MustCompile(`silence_start: ([0-9.]+)`)
	silenceEnd   = regexp.MustCompile(`silence_end: ([0-9.]+)`)
)

// TestSpeakTimesWordsToTheVoice: the word times a narration comes with (what the captions
// highlight and the WebVTT file's cue timestamps say) follow its audio, in English and in Chinese:
// at each comma the word before it ends where ffmpeg's silencedetect finds the voice's pause and
// the word after it starts where the voice resumes. An even spread of the sentence's time over its
// words misses the pauses by a tenth of a second or more.
func TestSpeakTimesWordsToTheVoice(t *testing.T) {
	if testing.Short() {
		t.Skip("runs espeak-ng and ffmpeg")
	}
	testtool.Need(t, "espeak-ng", "ffmpeg")
	t.Parallel()
	const slack = 0.05 // s: the two measures' thresholds differ a little
	scripts := map[string]struct{ voice, script string }{
		"en": {"en", "The harbour wakes before the town does, and the boats slip out one by one.\nOn a clear morning, the light turns gold on the water."},
		"zh": {"cmn", "第一，它的味道干净明亮。\n第二，你可以掌控每一个步骤，让清晨变得从容。"},
	}
	for lang, s := range scripts {
		t.Run(lang, func(t *testing.T) {
			t.Parallel()
			sp := &Speech{Out: filepath.Join(t.TempDir(), "n.wav"), Voice: s.voice, Script: s.script}
			spoken, err := sp.Speak(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command("ffmpeg", "-hide_banner", "-nostdin", "-i", sp.Out, "-af", "silencedetect=noise=-38dB:d=0.09",
				"-f", "null", "-").CombinedOutput()
			if err != nil {
				t.Fatalf("silencedetect: %v %s", err, out)
			}
			var pauses [][2]float64
			starts, ends := silenceStart.FindAllSubmatch(out, -1), silenceEnd.FindAllSubmatch(out, -1)
			for i := range min(len(starts), len(ends)) {
				from, _ := strconv.ParseFloat(string(starts[i][1]), 64)
				to, _ := strconv.ParseFloat(string(ends[i][1]), 64)
				pauses = append(pauses, [2]float64{from, to})
			}
			commas := 0
			for _, sentence := range spoken.Sentences {
				for i, w := range sentence.Words[:max(len(sentence.Words)-1, 0)] {
					if !strings.ContainsAny(w.Text, ",，") {
						continue
					}
					commas++
					next := sentence.Words[i+1]
					matched := false
					for _, p := range pauses {
						if math.Abs(w.End-p[0]) <= slack && math.Abs(next.Start-p[1]) <= slack {
							matched = true
						}
					}
					if !matched {
						t.Errorf("%q ends at %.3f s and %q starts at %.3f s; the voice pauses at %v", w.Text, w.End, next.Text, next.Start, pauses)
					}
				}
			}
			if commas < 2 {
				t.Fatalf("%d commas among the words %+v, want the script's 2", commas, spoken.Sentences)
			}
		})
	}
}
