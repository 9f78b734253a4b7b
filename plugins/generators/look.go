package generators

import (
	"fmt"

	"github.com/reelforge/reelforge/internal/render"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// How a creator asks a video to look and sound: its quality, its transitions and what becomes of
// its clips' own sound. The workflows declare them as inputs with these values (checked when a run
// starts); a job's payload from elsewhere is checked here the same way.

type look struct {
	quality    render.Quality
	transition render.Transition
	clipAudio  render.ClipAudio
}

// lookOf reads a payload's quality, transition and clip_audio: 400 naming the field for a value
// that is not one of the known ones.
func lookOf(payload map[string]any) (look, error) {
	var l look
	var err error
	if l.quality, err = render.ParseQuality(str(payload, "quality")); err != nil {
		return l, errcode.Invalid("payload.quality", fmt.Sprintf("%q is not one of draft, standard", str(payload, "quality")))
	}
	if l.transition, err = render.ParseTransition(str(payload, "transition")); err != nil {
		return l, errcode.Invalid("payload.transition", fmt.Sprintf("%q is not one of cut, fade, slide", str(payload, "transition")))
	}
	if l.clipAudio, err = render.ParseClipAudio(str(payload, "clip_audio")); err != nil {
		return l, errcode.Invalid("payload.clip_audio", fmt.Sprintf("%q is not one of duck, mute, keep", str(payload, "clip_audio")))
	}
	return l, nil
}

// focusOf reads a media item's focal point: {"focus": {"x": 0..1, "y": 0..1}} (the asset's
// metadata.focus, which the host passes on with the item).
func focusOf(item map[string]any) (render.Focus, bool) {
	f, ok := item["focus"].(map[string]any)
	if !ok {
		return render.Focus{}, false
	}
	x, okx := num(f, "x")
	y, oky := num(f, "y")
	if !okx || !oky || x < 0 || x > 1 || y < 0 || y > 1 {
		return render.Focus{}, false
	}
	return render.Focus{X: x, Y: y, Set: true}, true
}

// soundNotes are a video result's keys saying what was done with its sound.
func soundNotes(v *render.Video) map[string]any {
	s := v.Sound
	out := map[string]any{}
	if s.Silent {
		out["loudness"] = "silent"
	} else {
		out["loudness_lufs"] = round(s.TargetLUFS)
		out["loudness_measured_lufs"] = round(s.MeasuredLUFS)
		out["loudness"] = fmt.Sprintf("normalised from %.1f to %.0f LUFS integrated, true peak at most %.0f dBTP (EBU R128: measured by ebur128, then a gain and a peak limiter)",
			s.MeasuredLUFS, s.TargetLUFS, render.TruePeakCeiling)
	}
	if s.Music != "" {
		out["music_mix"] = s.Music
	}
	if s.Clips != "" {
		out["clip_audio"] = s.Clips
	}
	return out
}

// longestShot is the longest shot of v in seconds.
func longestShot(v *render.Video) float64 {
	longest := 0.0
	for _, s := range v.Shots {
		longest = max(longest, s.Duration)
	}
	return longest
}

// shownMaterial is how many items of material v's shots show.
func shownMaterial(v *render.Video) int {
	seen := map[string]bool{}
	for _, s := range v.Shots {
		if s.Path != "" {
			seen[s.Path] = true
		}
	}
	return len(seen)
}
