package render

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/reelforge/reelforge/internal/testtool"
)

func TestFontFor(t *testing.T) {
	t.Parallel()
	for _, text := range []string{"Morning coffee, made simple.", "早上好，咖啡。Reelforge", "커피 コーヒー"} {
		f, err := FontFor(text)
		if err != nil {
			testtool.Missing(t, err.Error())
		}
		if missing, err := missingGlyphs(f, drawn(text)); err != nil || len(missing) != 0 {
			t.Errorf("FontFor(%q) = %s, which lacks %q (%v)", text, f, string(missing), err)
		}
	}
	// Cuneiform is in none of the fonts a host installs: refused, naming the script.
	_, err := FontFor("𒀀𒀁 and more")
	if !errors.Is(err, ErrNoFont) || !strings.Contains(err.Error(), "Cuneiform") || !strings.Contains(err.Error(), "install") {
		t.Errorf("FontFor(cuneiform) = %v, want ErrNoFont naming the script and what to install", err)
	}
}

func TestBeats(t *testing.T) {
	t.Parallel()
	got := Beats("[Hook] Coffee, made simple. Really!\n[Beat 1]\nGrind fresh.\n\n[CTA] 关注我们。谢谢！")
	want := [][]string{{"Coffee, made simple.", "Really!"}, {"Grind fresh."}, {"关注我们。", "谢谢！"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Beats (-want +got):\n%s", diff)
	}
}

func TestPlanVideo(t *testing.T) {
	t.Parallel()
	script := "[Hook] One. Two.\n[Beat] Six.\n[End] Ten."
	measured := []Timed{{Text: "One.", End: 1}, {Text: "Two.", Start: 1.2, End: 2}, {Text: "Three.", Start: 2.3, End: 5}, {Text: "Four.", Start: 5.2, End: 6}}
	material := []Material{{Path: "a.png", Kind: ShotImage}, {Path: "b.png", Kind: ShotImage}}
	tests := map[string]struct {
		plan       Plan
		wantDur    float64
		wantTempo  float64
		wantShots  []Shot
		wantFirst  Caption // the first caption
		wantSecond Caption
	}{
		"measured, longer target": {
			plan:    Plan{Script: script, Sentences: measured, Narration: "n.wav", NarrationSecs: 6, Target: 8, Material: material},
			wantDur: 8, wantTempo: 1,
			wantShots: []Shot{{Kind: ShotImage, Path: "a.png", Duration: 2.3}, {Kind: ShotImage, Path: "b.png", Duration: 2.9, Move: 1}, {Kind: ShotImage, Path: "a.png", Duration: 2.8, Move: 1}},
			wantFirst: Caption{Text: "One.", From: 0, To: 1.2}, wantSecond: Caption{Text: "Two.", From: 1.2, To: 2.3},
		},
		"narration sped up to the target": {
			plan:    Plan{Script: script, Sentences: measured, Narration: "n.wav", NarrationSecs: 6, Target: 4, Material: material},
			wantDur: 4, wantTempo: 1.5,
			// 4 s is one shot's most, but two pictures were given: each is shown.
			wantShots: []Shot{{Kind: ShotImage, Path: "a.png", Duration: 2}, {Kind: ShotImage, Path: "b.png", Duration: 2, Move: 1}},
			wantFirst: Caption{Text: "One.", From: 0, To: 0.8}, wantSecond: Caption{Text: "Two.", From: 0.8, To: 2.3 / 1.5},
		},
		"no material, no narration: title cards by length": {
			plan:    Plan{Script: script, Title: "T", Target: 9},
			wantDur: 9, wantTempo: 1,
			wantShots: []Shot{{Kind: ShotTitle, Text: "T", Duration: 4.5, Color: palette[0]}, {Kind: ShotTitle, Duration: 2.25, Color: palette[1]}, {Kind: ShotTitle, Duration: 2.25, Color: palette[2]}},
			wantFirst: Caption{Text: "One.", From: 0, To: 2.25}, wantSecond: Caption{Text: "Two.", From: 2.25, To: 4.5},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			v := tc.plan.Video("out.mp4")
			approx := cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-6 })
			noWords := cmpopts.IgnoreFields(Caption{}, "Words")
			if v.Duration != tc.wantDur || math.Abs(v.Tempo-tc.wantTempo) > 1e-6 {
				t.Errorf("duration %v tempo %v, want %v and %v", v.Duration, v.Tempo, tc.wantDur, tc.wantTempo)
			}
			if diff := cmp.Diff(tc.wantShots, v.Shots, approx); diff != "" {
				t.Errorf("shots (-want +got):\n%s", diff)
			}
			total := 0.0
			for _, s := range v.Shots {
				total += s.Duration
			}
			if math.Abs(total-v.Duration) > 1e-6 {
				t.Errorf("shots last %v, the video %v", total, v.Duration)
			}
			if len(v.Captions) != 4 || !cmp.Equal(tc.wantFirst, v.Captions[0], approx, noWords) || !cmp.Equal(tc.wantSecond, v.Captions[1], approx, noWords) {
				t.Errorf("captions %+v, want first %+v and second %+v", v.Captions, tc.wantFirst, tc.wantSecond)
			}
		})
	}
}

func TestImageFrame(t *testing.T) {
	t.Parallel()
	for in, want := range map[[2]string]Frame{
		{"3:4", ""}: {1080, 1440}, {"16:9", ""}: {1440, 810}, {"1:1", ""}: {1440, 1440},
		{"", "xiaohongshu"}: {1080, 1440}, {"", "bilibili"}: {1440, 810}, {"", "douyin"}: {810, 1440},
	} {
		if got, err := ImageFrame(in[0], in[1]); err != nil || got != want {
			t.Errorf("ImageFrame(%q, %q) = %v, %v; want %v", in[0], in[1], got, err, want)
		}
	}
	for _, bad := range []string{"wide", "3:0", "10:1", "a:b"} {
		if _, err := ImageFrame(bad, ""); err == nil {
			t.Errorf("ImageFrame(%q) accepted", bad)
		}
	}
}

// TestMeasureSentences: sentence times found from the pauses of a narration match the times the
// narration was made with.
func TestMeasureSentences(t *testing.T) {
	if testing.Short() {
		t.Skip("runs espeak-ng and ffmpeg")
	}
	testtool.Need(t, "espeak-ng", "ffmpeg")
	t.Parallel()
	sp := &Speech{Out: filepath.Join(t.TempDir(), "n.wav"), Voice: "en",
		Script: "The harbour wakes before the town does. Boats slip out one by one. The light turns gold on the water, and then it is day."}
	spoken, err := sp.Speak(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, s := range spoken.Sentences {
		texts = append(texts, s.Text)
	}
	got := Tools{}.MeasureSentences(t.Context(), sp.Out, texts, spoken.Duration)
	if len(got) != len(spoken.Sentences) {
		t.Fatalf("MeasureSentences = %+v, want %d sentences", got, len(spoken.Sentences))
	}
	for i := 1; i < len(got); i++ {
		if d := math.Abs(got[i].Start - spoken.Sentences[i].Start); d > 0.4 {
			t.Errorf("sentence %d measured from %.2f s, spoken from %.2f s", i, got[i].Start, spoken.Sentences[i].Start)
		}
	}
}

// TestSpeakFittedSaysPace: a script about twice as long as its target is spoken faster to fit,
// and the narration says so (Pace), with the speed asked for and the length at it; the same script
// given about its own length keeps the speed and says nothing.
func TestSpeakFittedSaysPace(t *testing.T) {
	if testing.Short() {
		t.Skip("runs espeak-ng")
	}
	testtool.Need(t, "espeak-ng")
	t.Parallel()
	script := "Here are three tips for morning light.\nTip 1: Start small, pick one part and do only that for a week.\n" +
		"Tip 2: Set it up the night before, so the first step takes no willpower."
	natural, err := (&Speech{Out: filepath.Join(t.TempDir(), "n.wav"), Voice: "en", Script: script}).Speak(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if natural.Asked != 165 || natural.Speed != 165 || natural.Natural != natural.Duration || natural.Pace() != "" {
		t.Fatalf("untargeted narration: asked %d, speed %d, natural %.2f s, duration %.2f s, pace %q; want 165, 165, equal, none",
			natural.Asked, natural.Speed, natural.Natural, natural.Duration, natural.Pace())
	}

	rushed, err := (&Speech{Out: filepath.Join(t.TempDir(), "r.wav"), Voice: "en", Script: script, Target: natural.Duration / 2}).Speak(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if rushed.Asked != 165 || rushed.Speed < 250 || math.Abs(rushed.Natural-natural.Duration) > 0.1 || rushed.Duration > natural.Duration*0.7 {
		t.Errorf("narration fitted to %.2f s: asked %d, speed %d, natural %.2f s, duration %.2f s; want 165, about 330, %.2f s, about half",
			natural.Duration/2, rushed.Asked, rushed.Speed, rushed.Natural, rushed.Duration, natural.Duration)
	}
	if p := rushed.Pace(); !strings.Contains(p, fmt.Sprintf("spoken at %d words a minute", rushed.Speed)) || !strings.Contains(p, "a longer duration") {
		t.Errorf("Pace() = %q, want the speed and what to change", p)
	}

	kept, err := (&Speech{Out: filepath.Join(t.TempDir(), "k.wav"), Voice: "en", Script: script, Target: natural.Duration / 0.95}).Speak(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if kept.Speed != 165 || kept.Pace() != "" {
		t.Errorf("narration given its own length: speed %d, pace %q; want 165 and no word on pace", kept.Speed, kept.Pace())
	}
}

// TestPace: a fitted speed within a fifth of the one asked for is the voice's own pace; beyond,
// Pace names the speed and the natural length, faster or slower.
func TestPace(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		spoken Spoken
		want   []string // "" means Pace says nothing
	}{
		"as asked":           {Spoken{Speed: 165, Asked: 165, Natural: 9}, nil},
		"a fifth faster":     {Spoken{Speed: 198, Asked: 165, Natural: 12}, nil},
		"twice as fast":      {Spoken{Speed: 364, Asked: 165, Natural: 19.8}, []string{"spoken at 364 words a minute", "2.2 times the usual 165", "takes 20 s", "a longer duration"}},
		"slowed down":        {Spoken{Speed: 120, Asked: 165, Natural: 5}, []string{"spoken at 120 words a minute", "slower than the usual 165", "takes 5 s", "a shorter duration"}},
		"not from espeak-ng": {Spoken{Speed: 0, Asked: 0}, nil},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := tt.spoken.Pace()
			if (got == "") != (tt.want == nil) {
				t.Fatalf("Pace() = %q, want something: %v", got, tt.want != nil)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("Pace() = %q, want it to hold %q", got, w)
				}
			}
		})
	}
}

// TestRenderCutOffLeavesNoFile: a render whose ffmpeg is killed mid-way (its context ends) leaves
// nothing at Out, nor its partial file; a render that succeeds leaves only Out.
func TestRenderCutOffLeavesNoFile(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ffmpeg")
	}
	testtool.Need(t, "ffmpeg")
	t.Parallel()
	dir := t.TempDir()
	card := func(out string, secs float64) *Video {
		return &Video{Out: filepath.Join(dir, out), Frame: Frame{160, 120}, Duration: secs,
			Shots: []Shot{{Kind: ShotTitle, Duration: secs}}}
	}

	// Long enough to be killed while ffmpeg writes: cancelled once the partial file has bytes.
	cut := card("cut.mp4", 3600)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- cut.Render(ctx) }()
	if !testtool.Within(time.Minute, func() bool {
		st, err := os.Stat(partialName(cut.Out))
		return err == nil && st.Size() > 0
	}) {
		cancel()
		t.Fatalf("ffmpeg wrote nothing to %s within a minute (render: %v)", partialName(cut.Out), <-done)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Render cut off = %v, want context.Canceled", err)
	}

	whole := card("whole.mp4", 1)
	if err := whole.Render(t.Context()); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if diff := cmp.Diff([]string{"whole.mp4"}, got); diff != "" {
		t.Errorf("files after a cut-off and a whole render (-want +got):\n%s", diff)
	}
}

func TestIsPartial(t *testing.T) {
	t.Parallel()
	tests := map[string]bool{
		partialName("/d/assets/u/video/job1.mp4"):  true,
		partialName("job1.png"):                    true,
		"/d/assets/u/video/job1.mp4":               false,
		"job1.wav":                                 false,
		"partial.mp4":                              false,
		"0b7c2f3e-1d2c-4b8e-9a61-2f0c5d7e8a90.mp4": false,
	}
	for name, want := range tests {
		if got := IsPartial(name); got != want {
			t.Errorf("IsPartial(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestCaptionFiles: a caption's pages become cues on their times, in WebVTT (markup escaped) and
// SRT, their lines kept and nothing else.
func TestCaptionFiles(t *testing.T) {
	t.Parallel()
	cs := []Caption{{Text: "Fish & chips <3", From: 0, To: 1.5}, {Text: "line one\nline two", From: 1.5, To: 3723.0405}}
	wantVTT := "WEBVTT\n\n1\n00:00:00.000 --> 00:00:01.500\nFish &amp; chips &lt;3\n\n2\n00:00:01.500 --> 01:02:03.041\nline one\nline two\n"
	if got := WebVTT(cs); got != wantVTT {
		t.Errorf("WebVTT:\n%q\nwant\n%q", got, wantVTT)
	}
	wantSRT := "1\n00:00:00,000 --> 00:00:01,500\nFish & chips <3\n\n2\n00:00:01,500 --> 01:02:03,041\nline one\nline two\n"
	if got := SRT(cs); got != wantSRT {
		t.Errorf("SRT:\n%q\nwant\n%q", got, wantSRT)
	}
	v := &Video{Frame: Frame{720, 1280}, Captions: []Caption{{Text: strings.Repeat("A long caption that wraps. ", 8), From: 2, To: 10}}}
	shown := v.ShownCaptions()
	if len(shown) < 2 || shown[0].From != 2 || math.Abs(shown[len(shown)-1].To-10) > 1e-9 {
		t.Errorf("ShownCaptions = %+v, want the caption in pages from 2 to 10 s", shown)
	}
}

// TestCover: emoji are drawn in colour from the emoji font (☕ too, though DejaVu has a plain
// one), everything else from one text font, and what no font has is dropped, with a note naming
// what to install; the joiners of emoji sequences are not drawn.
func TestCover(t *testing.T) {
	t.Parallel()
	if EmojiFont() == "" {
		testtool.Missing(t, "no colour emoji font (fonts-noto-color-emoji)")
	}
	g, err := Cover("手冲咖啡☕的三个理由🔥 Coffee in space 🚀 👩\u200d🚀 𒀀")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range "☕🔥🚀👩" {
		if !slices.Contains(g.Emoji, r) {
			t.Errorf("Cover: emoji %q not drawn in colour (emoji %q)", r, string(g.Emoji))
		}
	}
	if string(g.Dropped) != "𒀀" || !strings.Contains(g.Note(), "Cuneiform") || !strings.Contains(g.Note(), "fonts-noto") {
		t.Errorf("Cover dropped %q (note %q), want the Cuneiform character with a note naming a font package", string(g.Dropped), g.Note())
	}
	if got := g.Strip("a👩\u200d🚀 𒀀b"); got != "a👩🚀 b" {
		t.Errorf("Strip = %q, want the joiner and the dropped character gone", got)
	}
	if missing, err := missingGlyphs(g.Font, drawn("手冲咖啡的三个理由 Coffee")); err != nil || len(missing) > 0 {
		t.Errorf("Cover's text font %s lacks %q (%v)", g.Font, string(missing), err)
	}
	e, err := openEmoji(g.EmojiFont, []rune("🔥"))
	if err != nil {
		t.Fatal(err)
	}
	if p := e.picture('🔥'); p == nil || p.Bounds().Dx() < 64 {
		t.Errorf("the emoji font's picture of 🔥 = %v, want a PNG picture", p)
	}
	if err := noFont([]rune("🔥")); !strings.Contains(err.Error(), "fonts-noto-color-emoji") {
		t.Errorf("no font for an emoji: %v, want fonts-noto-color-emoji named", err)
	}
	if err := noFont([]rune("咖啡")); !strings.Contains(err.Error(), "fonts-noto-cjk") {
		t.Errorf("no font for Chinese: %v, want fonts-noto-cjk named", err)
	}
}

// TestPlanPacing: a minute from three pictures and a clip is cut into shots of at most 4 s,
// at sentence boundaries where one is in reach, the material in the order given; a picture shown
// again comes with another move, a clip goes on where it left off.
func TestPlanPacing(t *testing.T) {
	t.Parallel()
	// Sentences of 2.5 to 9 s: some boundaries in reach of a shot, some not.
	var script strings.Builder
	var timed []Timed
	at := 0.0
	for i, d := range []float64{2.5, 9, 3, 6.5, 2.5, 3.5, 9, 4, 5, 3, 6, 6} {
		text := fmt.Sprintf("Sentence %d.", i)
		script.WriteString(text + " ")
		timed = append(timed, Timed{Text: text, Start: at, End: at + d - 0.2})
		at += d
	}
	material := []Material{{Path: "a.jpg", Kind: ShotImage}, {Path: "b.jpg", Kind: ShotImage, Focus: Focus{X: 0.2, Y: 0.3, Set: true}},
		{Path: "c.mp4", Kind: ShotClip, Duration: 5, Sound: true}, {Path: "d.jpg", Kind: ShotImage}}
	p := Plan{Script: script.String(), Sentences: timed, Narration: "n.wav", NarrationSecs: at, Material: material}
	v := p.Video("out.mp4")
	if v.Duration != 60 {
		t.Fatalf("duration %v, want 60", v.Duration)
	}
	starts := map[float64]bool{}
	for _, s := range timed {
		starts[math.Round(s.Start*1000)/1000] = true
	}
	total, onBoundary := 0.0, 0
	seen := map[string]map[int]bool{}
	clipShown := 0.0
	for k, s := range v.Shots {
		if s.Duration > wantMaxShot+1e-9 || s.Duration < minShot {
			t.Errorf("shot %d lasts %.2f s, want %v..%v", k, s.Duration, minShot, wantMaxShot)
		}
		if want := material[k%len(material)]; s.Path != want.Path || s.Focus != want.Focus {
			t.Errorf("shot %d shows %s (focus %+v), want %s (%+v): the creator's order", k, s.Path, s.Focus, want.Path, want.Focus)
		}
		if starts[math.Round(total*1000)/1000] {
			onBoundary++
		}
		if s.Kind == ShotClip {
			if math.Abs(s.Offset-math.Mod(clipShown, 5)) > 1e-6 || !s.Sound {
				t.Errorf("clip shot %d from %.2f s (sound %v), want from %.2f s with its sound", k, s.Offset, s.Sound, math.Mod(clipShown, 5))
			}
			clipShown += s.Duration
		} else {
			if seen[s.Path] == nil {
				seen[s.Path] = map[int]bool{}
			}
			if seen[s.Path][s.Move%len(moves)] && len(seen[s.Path]) < len(moves) {
				t.Errorf("shot %d shows %s with move %d again", k, s.Path, s.Move)
			}
			seen[s.Path][s.Move%len(moves)] = true
		}
		total += s.Duration
	}
	if math.Abs(total-60) > 1e-6 {
		t.Errorf("shots last %v s, want 60", total)
	}
	// 12 sentences: at least 9 of the cuts (and the start) on a sentence's start.
	if onBoundary < 10 || len(v.Shots) < 15 {
		t.Errorf("%d shots, %d starting on a sentence; want at least 15 shots and 10 on sentences: %+v", len(v.Shots), onBoundary, v.Shots)
	}
}

// TestPlanShowsEveryItem: more material than the pacing has shots is shown, each item once in the
// creator's order, in shorter shots (at least MinShow); material past what shots of MinShow can
// hold is left out rather than cut shorter.
func TestPlanShowsEveryItem(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		secs        float64
		items, want int // items given, shots wanted
	}{
		{4, 2, 2},  // one 4 s shot by pacing: two of 2 s
		{10, 5, 5}, // three by pacing
		{30, 12, 12},
		{30, 3, 8},  // scarce material: the pacing's shots, reused
		{10, 40, 9}, // the pacing's three shots of 3.3 s in three parts each: 1.1 s
	} {
		var material []Material
		for i := range tt.items {
			material = append(material, Material{Path: fmt.Sprintf("%02d.jpg", i), Kind: ShotImage})
		}
		p := Plan{Script: "One sentence of the video.", Target: tt.secs, Material: material}
		v := p.Video("out.mp4")
		total := 0.0
		for k, s := range v.Shots {
			if want := material[k%len(material)].Path; s.Path != want {
				t.Errorf("%v s, %d items: shot %d shows %s, want %s", tt.secs, tt.items, k, s.Path, want)
			}
			if s.Duration < MinShow-1e-9 || s.Duration > wantMaxShot+1e-9 {
				t.Errorf("%v s, %d items: shot %d lasts %.2f s, want %v..%v", tt.secs, tt.items, k, s.Duration, MinShow, wantMaxShot)
			}
			total += s.Duration
		}
		if len(v.Shots) != tt.want || math.Abs(total-tt.secs) > 1e-6 {
			t.Errorf("%v s, %d items: %d shots lasting %.2f s, want %d lasting %v", tt.secs, tt.items, len(v.Shots), total, tt.want, tt.secs)
		}
	}
}
