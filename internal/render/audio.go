package render

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// The sound of a video: the narration, the music under it (ducked while the voice speaks), and
// the clips' own sound, mixed in a run of its own and brought to the platforms' loudness.
//
// Loudness is EBU R128's, in two passes: the mix is measured while it is written (mixAudio, ffmpeg's
// ebur128: integrated loudness and true peak, a few hundred milliseconds for a minute of sound, no
// video involved), and the video's sound run applies the gain the measure asks for, a plain
// volume with a peak limiter after it (normalize). So a video is encoded once, and its sound lands
// at TargetLUFS with its true peak under TruePeakCeiling.
//
// A plain gain leaves the peaks alone only when they are at most about 11.5 dB over the mix's
// loudness (limiterCeiling - TargetLUFS). espeak-ng's narration is not so: it averages about -20
// LUFS and peaks 16 (English) to 17 dB (Chinese) over that. loudnorm, which measured and applied
// the gain before, then fell back to its dynamic mode and left videos at -14.5 to -15.0 LUFS; a
// limiter after the gain would cut into every syllable. So the narration is levelled before the
// mix (voiceLevel), which brings it to about 10 dB, and the limiter only holds the odd peak of a
// clip's or a track's own sound. Measured on 30 s of narration under music: -14.0 LUFS where
// loudnorm gave -15.0, and 0.8 s of CPU for both passes where loudnorm took 2.8 s.

// Loudness targets: the platforms (Douyin, YouTube, Spotify's video) normalise to about -14 LUFS;
// a true peak of -1 dBTP leaves the AAC encoder its head room. The limiter holds the samples a
// decibel and a half under the ceiling (limiterCeiling): between samples the signal passes them by
// up to about 0.6 dB (ebur128's true peak of speech limited at -12 dBFS: -11.4 dBTP), and the AAC
// file's peaks differ from its input's by up to about 0.6 dB again.
const (
	TargetLUFS      = -14.0
	TruePeakCeiling = -1.0
	limiterCeiling  = -2.5 // dBFS, sample peak
)

// voiceLevel levels the narration before the mix: speechnorm brings each half-cycle of the voice
// towards one peak (a quiet syllable up to 12 dB up, a loud one down), so the chain does the same
// whatever the voice's own level, and alimiter cuts the peaks that remain 6 dB under it. espeak-ng's
// English and Chinese come out at -21.5 to -22 LUFS with peaks 10 to 10.5 dB over that (16 and 17 dB
// before), at -12 dB and 12 dB quieter alike. latency=1 takes the limiter's look-ahead back out, so
// the voice stays on the captions' clock.
const voiceLevel = "speechnorm=e=4:c=2:p=0.6,alimiter=limit=0.3:level=0:latency=1"

// ClipAudio is what becomes of a clip's own sound.
type ClipAudio string

// ClipAudio values: ducked under the narration (the default), kept at its level, or muted.
const (
	ClipDuck ClipAudio = "duck"
	ClipKeep ClipAudio = "keep"
	ClipMute ClipAudio = "mute"
)

// ClipAudios are the values of a run's clip_audio input.
var ClipAudios = []string{string(ClipDuck), string(ClipMute), string(ClipKeep)}

// ParseClipAudio reads a clip_audio input ("" is duck); anything else is an error naming the values.
func ParseClipAudio(s string) (ClipAudio, error) {
	switch c := ClipAudio(strings.ToLower(strings.TrimSpace(s))); c {
	case "":
		return ClipDuck, nil
	case ClipDuck, ClipKeep, ClipMute:
		return c, nil
	}
	return "", fmt.Errorf("render: clip_audio %q is not one of %s", s, strings.Join(ClipAudios, ", "))
}

// Sound is what Render did with a video's sound, for its result and trace.
type Sound struct {
	// MeasuredLUFS and MeasuredPeak are the mix's integrated loudness and true peak before
	// normalisation; TargetLUFS is what it was brought to. All zero when the video is silent.
	MeasuredLUFS, MeasuredPeak, TargetLUFS float64
	Music                                  string // "ducked under the narration", "full", "" for none
	Clips                                  string // "ducked", "kept", "muted", "" for no clip sound
	Silent                                 bool
}

// Music levels: under a narration the music sits musicUnderVoice LU under the narration's
// loudness, both measured as the mix takes them (musicGain), whatever the track's own level: a
// mastered track at -9 LUFS and a quiet one at -30 land at the same place. While the voice speaks
// it ducks a further ~10 dB (sidechaincompress keyed by the narration); a clip's sound ducks the
// same way. 18 LU is the middle of what voice-over mixes use (15 to 20 LU under the speech): the
// music is heard in the pauses and never competes with a word.
const (
	musicUnderVoice = 18.0 // LU
	duck            = "threshold=0.02:ratio=8:attack=20:release=350:makeup=1"
	// musicMaxGain bounds the gain a quiet track gets: a track far under the voice stays a little
	// further under it rather than have its noise floor raised with it.
	musicMaxGain = 12.0 // dB
)

// mixAudio writes the video's sound to a float WAV in work and measures its loudness. It returns
// the file ("" when the video has no sound) and the filter that brings it to TargetLUFS.
func (v *Video) mixAudio(ctx context.Context, work string) (file, filter string, err error) {
	dur := ff(v.Duration)
	args := []string{"-y", "-hide_banner", "-nostdin"}
	var graph, parts []string
	in := 0
	voice := false
	var keys []string // the narration's copies that key the ducking
	key := func() string {
		k := fmt.Sprintf("[key%d]", len(keys))
		keys = append(keys, k)
		return k
	}
	if v.Narration != "" {
		args = append(args, "-i", v.Narration)
		graph = append(graph, fmt.Sprintf("[%d:a]%s,apad,atrim=0:%s[voice]", in, v.voiceChain(), dur))
		parts = append(parts, "[voice]")
		voice = true
		in++
	}
	v.Sound = Sound{}
	if v.Music != "" {
		args = append(args, "-stream_loop", "-1", "-i", v.Music)
		chain := fmt.Sprintf("[%d:a]%s,afade=t=out:st=%s:d=1.5", in, v.musicChain(), ff(max(v.Duration-1.5, 0)))
		if voice {
			gain, err := v.musicGain(ctx)
			if err != nil {
				return "", "", err
			}
			chain += ",volume=" + ff(gain) + "dB[music];[music]" + key() + "sidechaincompress=" + duck
			v.Sound.Music = "ducked under the narration"
		} else {
			v.Sound.Music = "full"
		}
		graph = append(graph, chain+"[musicout]")
		parts = append(parts, "[musicout]")
		in++
	}
	// A clip's own sound, on the clip's shots' times.
	var clips []string
	if v.ClipAudio != ClipMute {
		at := 0.0
		for _, s := range v.Shots {
			if s.Kind == ShotClip && s.Sound {
				args = append(args, "-stream_loop", "-1", "-ss", ff(s.Offset), "-t", ff(s.Duration), "-i", s.Path)
				ms := int(at * 1000)
				graph = append(graph, fmt.Sprintf("[%d:a]%s,atrim=0:%s,asetpts=PTS-STARTPTS,afade=t=in:d=0.05,afade=t=out:st=%s:d=0.05,adelay=%d|%d[clip%d]",
					in, mixFormat, ff(s.Duration), ff(max(s.Duration-0.05, 0)), ms, ms, len(clips)))
				clips = append(clips, fmt.Sprintf("[clip%d]", len(clips)))
				in++
			}
			at += s.Duration
		}
	}
	if len(clips) > 0 {
		chain := strings.Join(clips, "") + fmt.Sprintf("amix=inputs=%d:duration=longest:normalize=0,apad,atrim=0:%s", len(clips), dur)
		switch {
		case v.ClipAudio == ClipKeep || !voice:
			v.Sound.Clips = "kept"
		default:
			chain += "[clipmix];[clipmix]" + key() + "sidechaincompress=" + duck
			v.Sound.Clips = "ducked"
		}
		graph = append(graph, chain+"[clipsout]")
		parts = append(parts, "[clipsout]")
	} else if v.ClipAudio == ClipMute && v.hasClipSound() {
		v.Sound.Clips = "muted"
	}
	if len(parts) == 0 {
		v.Sound.Silent = true
		return "", "", nil
	}
	if len(keys) > 0 { // the narration is mixed and keys each ducking: one copy each
		graph[0] = strings.TrimSuffix(graph[0], "[voice]") + fmt.Sprintf(",asplit=%d[voice]%s", len(keys)+1, strings.Join(keys, ""))
	}
	mix := "[voice]"
	if len(parts) > 1 {
		graph = append(graph, strings.Join(parts, "")+fmt.Sprintf("amix=inputs=%d:duration=first:normalize=0[mix]", len(parts)))
		mix = "[mix]"
	} else {
		mix = parts[0]
	}
	// The mix is written (as float: it may pass 0 dBFS before the gain) and measured in one run.
	graph = append(graph, mix+"asplit[out][measure];[measure]ebur128=peak=true:framelog=verbose[measured]")
	file = filepath.Join(work, "mix.wav")
	args = append(args, "-filter_complex", strings.Join(graph, ";"),
		"-map", "[out]", "-c:a", "pcm_f32le", "-t", dur, file, "-map", "[measured]", "-f", "null", "-")
	report, err := v.Tools.Stderr(ctx, "ffmpeg", args...)
	if err != nil {
		return "", "", err
	}
	m, err := parseEBUR128(report)
	if err != nil {
		return "", "", err
	}
	if m.I <= -70 { // silence (a muted track; ebur128's absolute gate is -70 LUFS): no gain to apply
		v.Sound.Silent = true
		return file, "anull", nil
	}
	v.Sound.MeasuredLUFS, v.Sound.MeasuredPeak, v.Sound.TargetLUFS = m.I, m.TP, TargetLUFS
	return file, normalize(m), nil
}

// voiceChain is the narration's filters in the mix: sped up to fit (Tempo), resampled, levelled.
func (v *Video) voiceChain() string {
	tempo := ""
	if v.Tempo > 1.001 {
		tempo = fmt.Sprintf("atempo=%s,", ff(min(v.Tempo, 2)))
	}
	return tempo + mixFormat + "," + voiceLevel
}

// musicChain is the music's filters in the mix before its level: resampled, cut to the video's
// length (its input loops).
func (v *Video) musicChain() string { return mixFormat + ",atrim=0:" + ff(v.Duration) }

// mixFormat is every track's format in the mix: float, AudioRate, stereo.
var mixFormat = fmt.Sprintf("aformat=sample_fmts=fltp:sample_rates=%d:channel_layouts=stereo", AudioRate)

// musicGain is the gain (dB) that puts the music musicUnderVoice LU under the narration: each is
// measured (ebur128, integrated) as the mix takes it, the narration levelled and the music looped to
// the video's length, in two runs side by side (a few tenths of a second for a minute of sound,
// beside the picture's run). A silent track or narration gets no gain.
func (v *Video) musicGain(ctx context.Context) (float64, error) {
	var voice r128
	var voiceErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		voice, voiceErr = v.loudness(ctx, []string{"-i", v.Narration}, v.voiceChain())
	}()
	music, err := v.loudness(ctx, []string{"-stream_loop", "-1", "-i", v.Music}, v.musicChain())
	<-done
	if err = errors.Join(err, voiceErr); err != nil {
		return 0, err
	}
	if voice.I <= -70 || music.I <= -70 {
		return 0, nil
	}
	return min(voice.I-musicUnderVoice-music.I, musicMaxGain), nil
}

// loudness measures the sound of input through the filters chain (ebur128).
func (v *Video) loudness(ctx context.Context, input []string, chain string) (r128, error) {
	args := append(append([]string{"-hide_banner", "-nostdin"}, input...),
		"-filter_complex", "[0:a]"+chain+",ebur128=peak=true:framelog=verbose", "-f", "null", "-")
	report, err := v.Tools.Stderr(ctx, "ffmpeg", args...)
	if err != nil {
		return r128{}, err
	}
	return parseEBUR128(report)
}

// normalize is the filter that brings a mix measured m to TargetLUFS: the gain, and a limiter that
// holds the peaks the gain would take over the ceiling (none, for a levelled narration with music
// or a clip's sound under it). The limiter changes nothing under its ceiling.
func normalize(m r128) string {
	return fmt.Sprintf("volume=%sdB,alimiter=limit=%s:level=0:latency=1", ff(TargetLUFS-m.I), strconv.FormatFloat(math.Pow(10, limiterCeiling/20), 'f', 4, 64))
}

func (v *Video) hasClipSound() bool {
	for _, s := range v.Shots {
		if s.Kind == ShotClip && s.Sound {
			return true
		}
	}
	return false
}

// r128 is what ebur128 measured of a sound: its integrated loudness (LUFS) and true peak (dBTP).
type r128 struct {
	I, TP float64
}

// ebur128's summary, printed when its run ends: "I:  -20.3 LUFS" under "Integrated loudness" and
// "Peak:  -1.5 dBFS" under "True peak" ("-inf" for silence).
var (
	r128I    = regexp.MustCompile(`I:\s+(-?[0-9.]+|-inf) LUFS`)
	r128Peak = regexp.MustCompile(`Peak:\s+(-?[0-9.]+|-inf) dBFS`)
)

// parseEBUR128 reads the summary ebur128 prints at the end of a run. The last one in stderr: ffmpeg
// may configure a filter graph twice, and the first graph's ebur128 prints an empty summary (-70
// LUFS, -inf) when it is freed.
func parseEBUR128(stderr string) (r128, error) {
	at := strings.LastIndex(stderr, "Summary:")
	if at < 0 {
		return r128{}, fmt.Errorf("render: ebur128 printed no measurement")
	}
	i, p := r128I.FindStringSubmatch(stderr[at:]), r128Peak.FindStringSubmatch(stderr[at:])
	if i == nil || p == nil {
		return r128{}, fmt.Errorf("render: ebur128's measurement: %q", stderr[at:])
	}
	num := func(s string) float64 {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return math.Inf(-1) // "-inf": silence
		}
		return f
	}
	return r128{I: num(i[1]), TP: num(p[1])}, nil
}
