package render

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
)

// The sound of a video: the narration, the music under it (ducked while the voice speaks), and
// the clips' own sound, mixed in a run of its own and brought to the platforms' loudness.
//
// Loudness is EBU R128's, in two passes of ffmpeg's loudnorm: the mix is measured while it is
// written (mixAudio: a few hundred milliseconds for a minute of sound, no video involved), and the
// video's run applies the gain the measure asks for (loudnorm's linear mode; it falls back to its
// dynamic mode when the gain would push the true peak above the ceiling). So a video is encoded
// once, and its sound lands at TargetLUFS with its true peak under TruePeakCeiling.

// Loudness targets: the platforms (Douyin, YouTube, Spotify's video) normalise to about -14 LUFS;
// a true peak of -1 dBTP leaves the AAC encoder its head room. loudnorm aims a decibel under the
// ceiling (truePeakAim): its true-peak estimate and the AAC file's differ by up to about 0.6 dB
// (a 15 s narration-only video aimed at -1.5 measured -0.9 dBTP with ebur128; nine others -1.1 to
// -1.4), so half a decibel was not enough.
const (
	TargetLUFS      = -14.0
	TruePeakCeiling = -1.0
	truePeakAim     = -2.0
	loudnessRange   = 11.0
)

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

// Music levels: under a narration the music sits 9 dB down and ducks a further ~12 dB while the
// voice speaks (sidechaincompress keyed by the narration); a clip's sound ducks the same way.
const (
	musicUnderVoice = "0.35"
	duck            = "threshold=0.02:ratio=8:attack=20:release=350:makeup=1"
)

// mixAudio writes the video's sound to a float WAV in work and measures its loudness. It returns
// the file ("" when the video has no sound) and the filter that brings it to TargetLUFS.
func (v *Video) mixAudio(ctx context.Context, work string) (file, normalize string, err error) {
	dur := ff(v.Duration)
	format := fmt.Sprintf("aformat=sample_fmts=fltp:sample_rates=%d:channel_layouts=stereo", AudioRate)
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
		tempo := ""
		if v.Tempo > 1.001 {
			tempo = fmt.Sprintf("atempo=%s,", ff(min(v.Tempo, 2)))
		}
		graph = append(graph, fmt.Sprintf("[%d:a]%s%s,apad,atrim=0:%s[voice]", in, tempo, format, dur))
		parts = append(parts, "[voice]")
		voice = true
		in++
	}
	v.Sound = Sound{}
	if v.Music != "" {
		args = append(args, "-stream_loop", "-1", "-i", v.Music)
		chain := fmt.Sprintf("[%d:a]%s,atrim=0:%s,afade=t=out:st=%s:d=1.5", in, format, dur, ff(max(v.Duration-1.5, 0)))
		if voice {
			chain += ",volume=" + musicUnderVoice + "[music];[music]" + key() + "sidechaincompress=" + duck
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
					in, format, ff(s.Duration), ff(max(s.Duration-0.05, 0)), ms, ms, len(clips)))
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
	graph = append(graph, fmt.Sprintf("%sasplit[out][measure];[measure]loudnorm=I=%s:TP=%s:LRA=%s:print_format=json[measured]",
		mix, ff(TargetLUFS), ff(truePeakAim), ff(loudnessRange)))
	file = filepath.Join(work, "mix.wav")
	args = append(args, "-filter_complex", strings.Join(graph, ";"),
		"-map", "[out]", "-c:a", "pcm_f32le", "-t", dur, file, "-map", "[measured]", "-f", "null", "-")
	report, err := v.Tools.Stderr(ctx, "ffmpeg", args...)
	if err != nil {
		return "", "", err
	}
	m, err := parseLoudnorm(report)
	if err != nil {
		return "", "", err
	}
	if math.IsInf(m.I, -1) || m.I < -70 { // silence (a muted track): no gain to apply
		v.Sound.Silent = true
		return file, "anull", nil
	}
	v.Sound.MeasuredLUFS, v.Sound.MeasuredPeak, v.Sound.TargetLUFS = m.I, m.TP, TargetLUFS
	normalize = fmt.Sprintf("loudnorm=I=%s:TP=%s:LRA=%s:measured_I=%s:measured_TP=%s:measured_LRA=%s:measured_thresh=%s:offset=%s:linear=true,aresample=%d",
		ff(TargetLUFS), ff(truePeakAim), ff(loudnessRange), ff(m.I), ff(m.TP), ff(m.LRA), ff(m.Thresh), ff(m.Offset), AudioRate)
	return file, normalize, nil
}

func (v *Video) hasClipSound() bool {
	for _, s := range v.Shots {
		if s.Kind == ShotClip && s.Sound {
			return true
		}
	}
	return false
}

// loudnormMeasure is what loudnorm's first pass prints.
type loudnormMeasure struct {
	I, TP, LRA, Thresh, Offset float64
}

// parseLoudnorm reads the JSON block loudnorm prints at the end of a run.
func parseLoudnorm(stderr string) (loudnormMeasure, error) {
	start := strings.LastIndex(stderr, "{")
	end := strings.LastIndex(stderr, "}")
	if start < 0 || end < start {
		return loudnormMeasure{}, fmt.Errorf("render: loudnorm printed no measurement")
	}
	var raw map[string]string
	if err := json.Unmarshal([]byte(stderr[start:end+1]), &raw); err != nil {
		return loudnormMeasure{}, fmt.Errorf("render: loudnorm's measurement: %w", err)
	}
	num := func(k string) float64 {
		f, err := strconv.ParseFloat(strings.TrimSpace(raw[k]), 64)
		if err != nil {
			return math.Inf(-1) // "-inf": silence
		}
		return f
	}
	return loudnormMeasure{I: num("input_i"), TP: num("input_tp"), LRA: max(num("input_lra"), 0), Thresh: num("input_thresh"),
		Offset: num("target_offset")}, nil
}
