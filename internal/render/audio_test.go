package render

import (
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/reelforge/reelforge/internal/testtool"
)

// TestSoundLoudness: a narrated video lands at -14 LUFS within half a decibel, its true peak at
// most -1 dBTP, in English and in Chinese (espeak-ng's Chinese peaks at 0 dBTP while
// averaging -20 LUFS: loudnorm's dynamic mode left it at -14.8 to -15.0), with music and a clip's
// own sound kept, ducked or muted; and a video of music alone. The picture is a small frame: the
// sound is what is checked.
func TestSoundLoudness(t *testing.T) {
	if testing.Short() {
		t.Skip("runs espeak-ng and ffmpeg")
	}
	testtool.Need(t, "espeak-ng", "ffmpeg", "ffprobe")
	t.Parallel()
	dir := t.TempDir()
	// Music as a mastered track is: chords and a pink-noise beat at about -13 LUFS, peaks 10 dB
	// over that. A clip of someone speaking over a brown-noise street, its peaks 15 dB over its
	// loudness.
	music, clip := filepath.Join(dir, "music.wav"), filepath.Join(dir, "clip.mp4")
	ffmpegOK(t, "make the music", "-f", "lavfi", "-i", "aevalsrc='0.25*sin(2*PI*220*t)+0.2*sin(2*PI*277*t)+0.2*sin(2*PI*330*t)*(0.6+0.4*sin(PI*t))':d=20:s=48000",
		"-f", "lavfi", "-i", "anoisesrc=color=pink:a=0.9:d=20:r=48000",
		"-filter_complex", "[1:a]volume='if(lt(mod(t,0.5),0.06),1,0.02)':eval=frame[beat];[0:a][beat]amix=inputs=2:normalize=0", "-ac", "2", music)
	street := &Speech{Out: filepath.Join(dir, "street.wav"), Voice: "en", Script: "Over here, the market opens at six and the bread is still warm."}
	if _, err := street.Speak(t.Context()); err != nil {
		t.Fatal(err)
	}
	ffmpegOK(t, "make the clip", "-f", "lavfi", "-i", "color=c=0x10b010:s=320x180:r=25:d=4", "-i", street.Out, "-f", "lavfi", "-i", "anoisesrc=color=brown:a=0.05:d=4",
		"-filter_complex", "[1:a]aresample=48000[s];[s][2:a]amix=inputs=2:normalize=0:duration=longest[a]", "-map", "0:v", "-map", "[a]",
		"-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac", "-t", "4", clip)

	scripts := map[string]struct{ voice, script string }{
		"en": {"en", "The harbour wakes before the town does, and the boats slip out one by one.\nThe light turns gold on the water, and then it is day."},
		"zh": {"cmn", "爱上手冲咖啡的三个理由。第一，它的味道干净明亮。\n第二，你可以掌控每一个步骤。第三，它让清晨变得从容。"},
	}
	for lang, s := range scripts {
		font, err := FontFor(s.script)
		if err != nil {
			testtool.Missing(t, err.Error())
		}
		sp := &Speech{Out: filepath.Join(dir, lang+".wav"), Voice: s.voice, Script: s.script}
		spoken, err := sp.Speak(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, clips := range []ClipAudio{ClipKeep, ClipDuck, ClipMute} {
			name := fmt.Sprintf("%s clip %s", lang, clips)
			p := Plan{Script: s.script, Sentences: spoken.Sentences, Narration: sp.Out, NarrationSecs: spoken.Duration, Frame: Frame{320, 180},
				Music: music, Font: font, Material: []Material{{Path: clip, Kind: ShotClip, Duration: 4, Sound: true}}}
			v := p.Video(filepath.Join(dir, lang+"-"+string(clips)+".mp4"))
			v.ClipAudio, v.Transition = clips, TransitionCut
			checkLoudness(t, name, v)
		}
	}
	v := (&Plan{Script: "Morning piano.", Target: 8, Frame: Frame{320, 180}, Music: music, Uncaptioned: true}).Video(filepath.Join(dir, "music.mp4"))
	checkLoudness(t, "music alone", v)
}

// checkLoudness renders v and checks its loudness and true peak.
func checkLoudness(t *testing.T, name string, v *Video) {
	t.Helper()
	if err := v.Render(t.Context()); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	integrated, peak := ebur128(t, v.Out)
	t.Logf("%s: %.1f LUFS, true peak %.1f dBTP (the mix: %.1f LUFS, %.1f dBTP)", name, integrated, peak, v.Sound.MeasuredLUFS, v.Sound.MeasuredPeak)
	if math.Abs(integrated-wantLUFS) > 0.5 || peak > wantPeak {
		t.Errorf("%s: %.1f LUFS, true peak %.1f dBTP; want %.0f±0.5 LUFS and at most %.0f dBTP (%+v)",
			name, integrated, peak, wantLUFS, wantPeak, v.Sound)
	}
}

// TestParseEBUR128: the last summary counts (ffmpeg's first filter graph may print an empty one
// when it is freed), and silence reads as -70 LUFS and -inf.
func TestParseEBUR128(t *testing.T) {
	t.Parallel()
	summary := func(i, peak string) string {
		return "[Parsed_ebur128_0 @ 0x1] Summary:\n\n  Integrated loudness:\n    I:         " + i + " LUFS\n    Threshold: -30.4 LUFS\n\n" +
			"  Loudness range:\n    LRA:         1.7 LU\n    Threshold: -40.5 LUFS\n\n  True peak:\n    Peak:       " + peak + " dBFS\n"
	}
	m, err := parseEBUR128("frame lines\n" + summary("-70.0", "-inf") + "more\n" + summary("-19.9", "-9.1"))
	if err != nil || m.I != -19.9 || m.TP != -9.1 {
		t.Errorf("parseEBUR128 = %+v, %v; want -19.9 LUFS, -9.1 dBTP", m, err)
	}
	if m, err := parseEBUR128(summary("-70.0", "-inf")); err != nil || m.I != -70 || !math.IsInf(m.TP, -1) {
		t.Errorf("parseEBUR128 of silence = %+v, %v", m, err)
	}
	if _, err := parseEBUR128("no summary"); err == nil {
		t.Error("parseEBUR128 without a summary: no error")
	}
}

// TestMusicUnderVoice: music sits musicUnderVoice LU under the narration, as measured on the
// rendered file (ebur128: the narration's stretch against the music alone after it), whatever the
// track's own level: a loud mastered track and one 20 dB quieter land within 2 LU of the same place.
func TestMusicUnderVoice(t *testing.T) {
	if testing.Short() {
		t.Skip("runs espeak-ng and ffmpeg")
	}
	testtool.Need(t, "espeak-ng", "ffmpeg")
	t.Parallel()
	dir := t.TempDir()
	narrated := narratedPlan(t, dir)
	for name, amp := range map[string]float64{"loud": 0.5, "quiet": 0.05} {
		music := filepath.Join(dir, name+".wav")
		ffmpegOK(t, "make the music", "-f", "lavfi", "-i",
			fmt.Sprintf("aevalsrc='%g*(sin(2*PI*220*t)+0.8*sin(2*PI*277*t)+0.8*sin(2*PI*330*t))*(0.6+0.4*sin(PI*t))':d=20:s=48000", amp),
			"-ac", "2", music)
		// The narration, then 5 s of music alone (its last 1.5 s fading out).
		p := narrated
		p.Target, p.Music = p.NarrationSecs+5, music
		v := p.Video(filepath.Join(dir, name+".mp4"))
		v.Transition = TransitionCut
		if err := v.Render(t.Context()); err != nil {
			t.Fatal(err)
		}
		speech := segmentLUFS(t, v.Out, 0, p.NarrationSecs)
		alone := segmentLUFS(t, v.Out, p.NarrationSecs+0.8, 2.5)
		t.Logf("%s music: speech %.1f LUFS, music alone %.1f LUFS: %.1f LU under", name, speech, alone, speech-alone)
		if under := speech - alone; math.Abs(under-musicUnderVoice) > 2 {
			t.Errorf("%s music: %.1f LU under the speech (%.1f against %.1f LUFS), want %.0f±2", name, under, alone, speech, musicUnderVoice)
		}
	}
}

// narratedPlan is a plan for a 320x180 video without captions, narrated (in dir) by espeak-ng's
// English voice saying one sentence: what the tests of the sound under the voice add music or a
// clip to.
func narratedPlan(t *testing.T, dir string) Plan {
	t.Helper()
	script := "The harbour wakes before the town does, and the boats slip out one by one."
	font, err := FontFor(script)
	if err != nil {
		testtool.Missing(t, err.Error())
	}
	sp := &Speech{Out: filepath.Join(dir, "voice.wav"), Voice: "en", Script: script}
	spoken, err := sp.Speak(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return Plan{Script: script, Sentences: spoken.Sentences, Narration: sp.Out, NarrationSecs: spoken.Duration, Frame: Frame{320, 180},
		Font: font, Uncaptioned: true}
}

// segmentLUFS is the integrated loudness (ebur128) of a file's sound over d seconds from at.
func segmentLUFS(t *testing.T, path string, at, d float64) float64 {
	t.Helper()
	out, err := exec.Command("ffmpeg", "-hide_banner", "-nostdin", "-ss", ff(at), "-t", ff(d), "-i", path, "-map", "0:a",
		"-af", "ebur128=framelog=verbose", "-f", "null", "-").CombinedOutput()
	if err != nil {
		t.Fatalf("ebur128 %s: %v %s", path, err, out)
	}
	at0 := strings.LastIndex(string(out), "Summary:")
	m := r128I.FindStringSubmatch(string(out[max(at0, 0):]))
	if at0 < 0 || m == nil {
		t.Fatalf("ebur128 %s: no measurement: %s", path, out)
	}
	i, _ := strconv.ParseFloat(m[1], 64)
	return i
}

// TestClipAudio: a clip's own sound (a 60 Hz hum, under the voice's pitch, so a narrow band reads it
// apart from the speech) is kept at its level under the narration with clip_audio keep, ducked
// while the voice speaks with duck, and gone with mute; each measured on the rendered file against
// the voice's band, which the normalisation moves with it.
func TestClipAudio(t *testing.T) {
	if testing.Short() {
		t.Skip("runs espeak-ng and ffmpeg")
	}
	testtool.Need(t, "espeak-ng", "ffmpeg")
	t.Parallel()
	dir := t.TempDir()
	narrated := narratedPlan(t, dir)
	clip := filepath.Join(dir, "clip.mp4")
	ffmpegOK(t, "make the clip", "-f", "lavfi", "-i", "color=c=0x10b010:s=320x180:r=25:d=8",
		"-f", "lavfi", "-i", "sine=frequency=60:duration=8", "-filter:a", "volume=0.5", "-c:v", "libx264", "-preset", "ultrafast",
		"-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest", clip)
	hum := map[ClipAudio]float64{}
	for _, c := range []ClipAudio{ClipKeep, ClipDuck, ClipMute} {
		p := narrated
		p.Material = []Material{{Path: clip, Kind: ShotClip, Duration: 8, Sound: true}}
		v := p.Video(filepath.Join(dir, string(c)+".mp4"))
		v.ClipAudio, v.Transition = c, TransitionCut
		if err := v.Render(t.Context()); err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		if want := map[ClipAudio]string{ClipKeep: "kept", ClipDuck: "ducked", ClipMute: "muted"}[c]; v.Sound.Clips != want {
			t.Errorf("%s: Sound.Clips = %q, want %q", c, v.Sound.Clips, want)
		}
		// While the first words are said (the clause before the comma runs to about 2.1 s).
		at, d := 0.3, 1.5
		voice := bandLevel(t, v.Out, at, d, "highpass=f=300,lowpass=f=3000")
		hum[c] = bandLevel(t, v.Out, at, d, humBand) - voice
		t.Logf("%s: the clip's hum %.1f dB against the voice", c, hum[c])
	}
	if hum[ClipKeep]-hum[ClipDuck] < 4 {
		t.Errorf("the hum at %.1f dB against the voice kept and %.1f ducked: want it at least 4 dB lower ducked", hum[ClipKeep], hum[ClipDuck])
	}
	if hum[ClipKeep]-hum[ClipMute] < 20 {
		t.Errorf("the hum at %.1f dB against the voice kept and %.1f muted: want it gone (20 dB lower at least)", hum[ClipKeep], hum[ClipMute])
	}
}
