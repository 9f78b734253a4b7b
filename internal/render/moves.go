package render

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
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
// could take a focal point out of the frame (a face at the top of a portrait, while the frame pans
// from the bottom upwards): imageMove shortens it (keep).
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

// The crop around a focal point: the picture, scaled to cover the crop, is cut so the point is at
// the crop's centre, or as near it as the picture allows (the crop stays inside the picture). A
// crop that kept the point at the same fraction of the crop as of the picture (as before) put a
// face high in a portrait (y=0.17) at the top of a 16:9 crop and cut the top of the head off.
// centred is the rule; centredExpr is the same rule in ffmpeg's terms, for a crop filter's x or y.

// centred is where a crop of length crop starts in a picture scaled to length scaled, for a point
// at fraction p of the picture.
func centred(p, scaled, crop float64) float64 {
	return min(max(p*scaled-crop/2, 0), max(scaled-crop, 0))
}

// centredExpr is centred as a crop filter's x (axis "w") or y ("h") expression.
func centredExpr(p float64, axis string) string {
	return fmt.Sprintf("clip(i%s*%s-o%s/2,0,i%s-o%s)", axis, ff(p), axis, axis, axis)
}

// focusIn is where the focal point of a picture of size pic is in its crop of w x h (fractions of
// the crop): scaled to cover it, cut by centred. A picture of unknown size (zero) is taken to have
// the crop's own shape.
func focusIn(pic Frame, w, h int, focus Focus) (x, y float64) {
	if pic.W <= 0 || pic.H <= 0 {
		pic = Frame{w, h}
	}
	scale := max(float64(w)/float64(pic.W), float64(h)/float64(pic.H))
	sw, sh := float64(pic.W)*scale, float64(pic.H)*scale
	x = (focus.x()*sw - centred(focus.x(), sw, float64(w))) / float64(w)
	y = (focus.y()*sh - centred(focus.y(), sh, float64(h))) / float64(h)
	return x, y
}

// imageMove is shot s's variation of its picture in frame f, its pan kept to the positions where
// the picture's focal point (when set) is at least a quarter of the frame from its edges.
func imageMove(f Frame, s Shot) move {
	m := moves[(s.Move%len(moves)+len(moves))%len(moves)]
	mv := move{W: even(float64(f.W) * m.margin), H: even(float64(f.H) * m.margin),
		X0: m.x0, Y0: m.y0, X1: m.x1, Y1: m.y1}
	if s.Focus.Set {
		x, y := focusIn(s.Size, mv.W, mv.H, s.Focus)
		mv.X0, mv.X1 = keep(mv.X0, x, mv.W, f.W), keep(mv.X1, x, mv.W, f.W)
		mv.Y0, mv.Y1 = keep(mv.Y0, y, mv.H, f.H), keep(mv.Y1, y, mv.H, f.H)
	}
	return mv
}

// keep clamps a pan's position a (a fraction of the margin size-frame) so that a point at
// fraction p of size is at least a quarter of frame from the frame's edges, or as near as the
// picture allows (a point at its very edge stays at the frame's edge). A quarter rather than a
// point's breadth: the point is the middle of a face, and a face is up to about half the frame's
// height in a 16:9 crop of a portrait; with a fifth the closer moves took a forehead out.
func keep(a, p float64, size, frame int) float64 {
	margin := float64(size - frame)
	if margin <= 0 {
		return a
	}
	pad := float64(frame) / 4
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
		x = slideIn("n", strconv.Itoa(slideFrames), "(iw-ow)*"+far, x)
	}
	return x
}

// slideIn is a crop position that moves from from to to over the first length of clock (n, in
// frames, or t, in seconds), easing out (quadratic), and is to after it: the slide transition.
func slideIn(clock, length, from, to string) string {
	return fmt.Sprintf("if(lt(%s,%s),%s+(%s-(%s))*(1-pow(1-%s/%s,2)),%s)", clock, length, from, to, from, clock, length, to)
}

// Y is the crop's y expression over frames frames.
func (m move) Y(frames int) string {
	return fmt.Sprintf("(ih-oh)*(%s+(%s)*n/%d)", ff(m.Y0), ff(m.Y1-m.Y0), frames)
}

// clipX is a clip's crop x expression: centred on the focal point; with whip the shot enters with
// the slide's sideways move, from up to clipSlide of the crop's width away (a clip in a frame of
// another shape has a margin several times a picture's: a move across all of it would be a blur).
// Timed by t, not n: a clip keeps its own frame rate until the chain's fps filter, after the crop.
// A clip of the frame's own shape has no margin to move across: it enters with a cut.
func clipX(focus Focus, fps int, whip bool) string {
	x := centredExpr(focus.x(), "w")
	if !whip {
		return x
	}
	from := fmt.Sprintf("min(%s+ow*%s,iw-ow)", x, ff(clipSlide))
	if focus.x() > 0.5 {
		from = fmt.Sprintf("max(%s-ow*%s,0)", x, ff(clipSlide))
	}
	return slideIn("t", ff(float64(slideFrames)/float64(fps)), from, x)
}

// clipSlide is how far (a fraction of the crop's width) a clip's slide comes from: about what a
// picture's slide travels (its margins are 12 to 30% of the frame).
const clipSlide = 0.25

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

// PictureSize is a picture's size in pixels as ffmpeg shows it: upright, turned by its EXIF
// orientation (ffprobe's stream says the stored size; the decoded frame's display matrix says how
// ffmpeg turns it).
func (t Tools) PictureSize(ctx context.Context, path string) (Frame, error) {
	out, _, err := t.run(ctx, "ffprobe", "-v", "error", "-select_streams", "v:0", "-read_intervals", "%+#1",
		"-show_frames", "-show_entries", "frame=width,height:frame_side_data=rotation", "-of", "json", path)
	if err != nil {
		return Frame{}, err
	}
	var probe struct {
		Frames []struct {
			Width, Height int
			SideData      []struct {
				Rotation int `json:"rotation"`
			} `json:"side_data_list"`
		} `json:"frames"`
	}
	if err := json.Unmarshal([]byte(out), &probe); err != nil || len(probe.Frames) == 0 || probe.Frames[0].Width <= 0 {
		return Frame{}, fmt.Errorf("render: no picture size from ffprobe in %s", filepath.Base(path))
	}
	f := probe.Frames[0]
	for _, sd := range f.SideData {
		if sd.Rotation%180 != 0 { // a quarter turn: upright, the sides swap
			return Frame{f.Height, f.Width}, nil
		}
	}
	return Frame{f.Width, f.Height}, nil
}
