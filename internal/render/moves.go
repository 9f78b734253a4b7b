package render

import (
	"fmt"
	"strings"
)

// How a shot shows its material: the crop around the creator's focal point, the move of a picture
// (a pan, Ken Burns style), and the transition into the next shot. A picture shown more than once
// comes back with another move (Shot.Move), so scarce material reads as new shots, not as one held.

// Focus is a focal point of a picture or clip, X and Y from 0 (left, top) to 1 (right, bottom).
// The zero Focus is unset: the centre.
type Focus struct {
	X, Y float64
	Set  bool
}

func (f Focus) x() float64 {
	if !f.Set {
		return 0.5
	}
	return min(max(f.X, 0), 1)
}

func (f Focus) y() float64 {
	if !f.Set {
		return 0.5
	}
	return min(max(f.Y, 0), 1)
}

// move is a picture's crop and pan: the picture is cropped to W x H (larger than the frame by the
// move's margin, around the focal point), and the frame moves across that crop from (X0, Y0) to
// (X1, Y1), as fractions of the margin.
type move struct {
	W, H           int
	X0, Y0, X1, Y1 float64
}

// moves are the variations of a picture, in the order a picture shown again takes them: the
// direction of the pan and how tight the crop is (a tighter crop is a closer view). A pan alone
// could take a focal point near the picture's edge out of the frame (a face at the top of a
// portrait, while the frame pans from the bottom upwards): imageMove shortens it (keep).
var moves = []struct {
	margin         float64
	x0, y0, x1, y1 float64
}{
	{1.12, 0, 0.5, 1, 0.5}, // left to right
	{1.30, 0.5, 1, 0.5, 0}, // closer, upwards
	{1.18, 1, 0.5, 0, 0.5}, // right to left
	{1.25, 0, 0, 1, 1},     // diagonal down
	{1.15, 0.5, 0, 0.5, 1}, // downwards
	{1.30, 1, 1, 0, 0},     // closer, diagonal up
}

// imageMove is variation variant of a picture in frame f, its pan kept to the positions where the
// picture's focal point (when set) is at least a fifth of the frame from its edges.
func imageMove(f Frame, variant int, focus Focus) move {
	m := moves[(variant%len(moves)+len(moves))%len(moves)]
	mv := move{W: even(float64(f.W) * m.margin), H: even(float64(f.H) * m.margin),
		X0: m.x0, Y0: m.y0, X1: m.x1, Y1: m.y1}
	if focus.Set {
		// The picture is cropped to W x H with the focal point at the same fraction of the crop
		// as of the picture (render's first crop), so it is at focus.x()*W, focus.y()*H.
		mv.X0, mv.X1 = keep(mv.X0, focus.x(), mv.W, f.W), keep(mv.X1, focus.x(), mv.W, f.W)
		mv.Y0, mv.Y1 = keep(mv.Y0, focus.y(), mv.H, f.H), keep(mv.Y1, focus.y(), mv.H, f.H)
	}
	return mv
}

// keep clamps a pan's position a (a fraction of the margin size-frame) so that a point at
// fraction p of size is at least a fifth of frame from the frame's edges, or as near as the
// picture allows (a point at its very edge stays at the frame's edge).
func keep(a, p float64, size, frame int) float64 {
	margin := float64(size - frame)
	if margin <= 0 {
		return a
	}
	pad := float64(frame) / 5
	lo := (p*float64(size) + pad - float64(frame)) / margin
	hi := (p*float64(size) - pad) / margin
	return min(max(a, lo, 0), max(hi, 0), 1)
}

// X is the crop's x expression over frames frames; with whip the shot enters with a quick
// sideways move (the slide transition) before its pan.
func (m move) X(frames int, whip bool) string {
	x := fmt.Sprintf("(iw-ow)*(%s+(%s)*n/%d)", ff(m.X0), ff(m.X1-m.X0), frames)
	if whip {
		// Over the first slideFrames frames the crop comes in from the far side of the margin,
		// easing out (quadratic), then follows the pan.
		far := "1"
		if m.X0 > 0.5 {
			far = "0"
		}
		x = fmt.Sprintf("if(lt(n,%d),(iw-ow)*%s+(%s-(iw-ow)*%s)*(1-pow(1-n/%d,2)),%s)", slideFrames, far, x, far, slideFrames, x)
	}
	return x
}

// Y is the crop's y expression over frames frames.
func (m move) Y(frames int) string {
	return fmt.Sprintf("(ih-oh)*(%s+(%s)*n/%d)", ff(m.Y0), ff(m.Y1-m.Y0), frames)
}

// clipMove is a clip's crop: the frame itself, or a closer view when the clip comes back.
func clipMove(f Frame, variant int) move {
	margin := []float64{1, 1.2, 1.35}[(variant%3+3)%3]
	return move{W: even(float64(f.W) * margin), H: even(float64(f.H) * margin)}
}

// Transition is how one shot gives way to the next.
type Transition string

// Transitions: a hard cut, a short dip through black (the default), or a slide (the new shot
// comes in with a quick sideways move).
const (
	TransitionCut   Transition = "cut"
	TransitionFade  Transition = "fade"
	TransitionSlide Transition = "slide"
)

// Transitions are the values of a run's transition input.
var Transitions = []string{string(TransitionCut), string(TransitionFade), string(TransitionSlide)}

// ParseTransition reads a transition input ("" is fade); anything else is an error naming the
// values.
func ParseTransition(s string) (Transition, error) {
	switch t := Transition(strings.ToLower(strings.TrimSpace(s))); t {
	case "":
		return TransitionFade, nil
	case TransitionCut, TransitionFade, TransitionSlide:
		return t, nil
	}
	return "", fmt.Errorf("render: transition %q is not one of %s", s, strings.Join(Transitions, ", "))
}

// Transition timings: a fade dips through black for fadeSecs out and fadeSecs in; a slide's move
// takes slideFrames. Both are done inside each shot's own chain (fade, crop), not by xfade:
// ffmpeg 5's xfade buffers whole shots of 1080p frames and made a render three times slower.
const (
	fadeSecs    = 0.15
	slideFrames = 9
)

// transition is the filters a shot of d seconds ends its chain with for v's transition ("" or
// ",fade=...").
func (v *Video) transition(d float64, first, last bool) string {
	if v.Transition != "" && v.Transition != TransitionFade || d < 4*fadeSecs {
		return ""
	}
	out := ""
	if !first {
		out += fmt.Sprintf(",fade=t=in:st=0:d=%s", ff(fadeSecs))
	}
	if !last {
		out += fmt.Sprintf(",fade=t=out:st=%s:d=%s", ff(d-fadeSecs), ff(fadeSecs))
	}
	return out
}
