package render

import (
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/reelforge/reelforge/internal/testtool"
)

// TestImageMoveKeepsTheFocus: every move of a picture keeps its focal point at least a quarter of
// the frame from the frame's edges all along the pan (a pan is linear: its ends suffice), or, when
// the point is nearer the crop's edge than that, no nearer the frame's edge than it is to the
// crop's; for a face high in a portrait photo (a creator's 60 s video panned it out of the top of
// the frame) and in the corners, in pictures of several shapes and of unknown size.
func TestImageMoveKeepsTheFocus(t *testing.T) {
	t.Parallel()
	frames := []Frame{{1080, 1920}, {1920, 1080}, {1080, 1080}, {1080, 1350}}
	pictures := []Frame{{1200, 1600}, {1600, 1200}, {3000, 1000}, {}}
	foci := []Focus{{X: 0.5, Y: 0.17, Set: true}, {X: 0.3, Y: 0.3, Set: true}, {X: 0.75, Y: 0.8, Set: true}, {X: 0.5, Y: 0.5, Set: true}}
	for _, f := range frames {
		for _, pic := range pictures {
			for _, focus := range foci {
				for variant := range moves {
					m := imageMove(f, Shot{Move: variant, Focus: focus, Size: pic})
					px, py := focusIn(pic, m.W, m.H, focus)
					for _, at := range [][2]float64{{m.X0, m.Y0}, {m.X1, m.Y1}} {
						// The point in the crop, and in the frame (the frame's top-left corner at
						// at's fractions of the crop's margin).
						cx, cy := px*float64(m.W), py*float64(m.H)
						x, y := cx-at[0]*float64(m.W-f.W), cy-at[1]*float64(m.H-f.H)
						w, h := float64(f.W), float64(f.H)
						left, right := min(w/4, cx), max(w*3/4, cx-float64(m.W-f.W))
						top, bottom := min(h/4, cy), max(h*3/4, cy-float64(m.H-f.H))
						if x < left-1 || x > right+1 || y < top-1 || y > bottom+1 {
							t.Errorf("frame %v, picture %v, focus %+v, move %d at %v: the point at (%.0f, %.0f) of the frame, want a quarter of it from every edge",
								f, pic, focus, variant, at, x, y)
						}
					}
					// Without a focus the move is the variation's own.
					if got, want := imageMove(f, Shot{Move: variant, Size: pic}), imageMove(f, Shot{Move: variant, Focus: Focus{X: 0.5, Y: 0.5}, Size: pic}); got != want {
						t.Errorf("imageMove(%v, %d) without a focus = %+v, want %+v", f, variant, got, want)
					}
				}
			}
		}
	}
	// A pan that keeps a centred focus is left as it is.
	if m := imageMove(Frame{1080, 1920}, Shot{Focus: Focus{X: 0.5, Y: 0.5, Set: true}, Size: Frame{1200, 1600}}); m.X0 != 0 || m.X1 != 1 {
		t.Errorf("a centred focus shortened the pan: %+v", m)
	}
}

// TestFocusInPortraitCrop: a face high in a portrait photo (y=0.17) is in the middle third of its
// 16:9 crop, not at its top: the crop is centred on it as far as the picture allows.
func TestFocusInPortraitCrop(t *testing.T) {
	t.Parallel()
	m := imageMove(Frame{1920, 1080}, Shot{Size: Frame{1200, 1600}})
	if _, y := focusIn(Frame{1200, 1600}, m.W, m.H, Focus{X: 0.5, Y: 0.17, Set: true}); y < 0.33 || y > 0.5 {
		t.Errorf("the face at %.2f of the crop's height, want it between a third and the middle", y)
	}
	// At the picture's very top it stays there: the crop does not leave the picture.
	if _, y := focusIn(Frame{1200, 1600}, m.W, m.H, Focus{X: 0.5, Y: 0, Set: true}); y != 0 {
		t.Errorf("a point at the top at %.2f of the crop, want 0", y)
	}
}

// TestRenderPortraitFace renders a portrait photo (stored sideways with an EXIF orientation, as a
// phone does) with a marked face high in it into a 16:9 video, a shot of each move, and checks a
// frame at both ends of every shot (a pan is linear): the whole mark is in the frame, none of it
// at the frame's edge.
func TestRenderPortraitFace(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ffmpeg")
	}
	testtool.Need(t, "ffmpeg", "ffprobe")
	t.Parallel()
	dir := t.TempDir()
	// 600x800 upright: grey, a red square face of 120x120 centred at (0.5, 0.17). Stored turned a
	// quarter to the left (800x600) with orientation 6, which ffmpeg turns back.
	stored := filepath.Join(dir, "stored.jpg")
	ffmpegOK(t, "make the photo", "-f", "lavfi", "-i",
		"color=c=0x808080:s=600x800,drawbox=x=240:y=76:w=120:h=120:color=0xff0000:t=fill,transpose=2", "-frames:v", "1", "-q:v", "2", stored)
	photo := filepath.Join(dir, "portrait.jpg")
	withOrientation(t, stored, photo, 6)
	size, err := Tools{}.PictureSize(t.Context(), photo)
	if err != nil || size != (Frame{600, 800}) {
		t.Fatalf("PictureSize = %v, %v; want 600x800 upright", size, err)
	}
	focus := Focus{X: 0.5, Y: 0.17, Set: true}
	v := &Video{Out: filepath.Join(dir, "face.mp4"), Frame: Frame{640, 360}, Transition: TransitionCut, Quality: QualityDraft}
	for move := range moves {
		v.Shots = append(v.Shots, Shot{Kind: ShotImage, Path: photo, Duration: 1, Move: move, Focus: focus, Size: size})
		v.Duration++
	}
	if err := v.Render(t.Context()); err != nil {
		t.Fatal(err)
	}
	for move := range moves {
		fps := v.Quality.FPS()
		for _, n := range []int{move * fps, move*fps + fps - 1} {
			box, ok := redBox(t, frameAt(t, v.Out, n))
			b := image.Rect(2, 2, v.Frame.W-2, v.Frame.H-2)
			if !ok || !box.In(b) || box.Dx() < 100 || abs(box.Dx()-box.Dy()) > 6 {
				t.Errorf("move %d, frame %d: the face at %v of the %v frame, want it whole and inside (square, not cut)", move, n, box, v.Frame)
			}
		}
	}
}

// withOrientation writes src (a JPEG) to dst with an Exif APP1 segment giving orientation o.
func withOrientation(t *testing.T, src, dst string, o byte) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	// A big-endian TIFF header and IFD0 with one entry, Orientation (0x0112), a SHORT.
	tiff := []byte{'M', 'M', 0, 42, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, o, 0, 0, 0, 0, 0, 0}
	app1 := append([]byte("Exif\x00\x00"), tiff...)
	seg := append([]byte{0xff, 0xe1, byte((len(app1) + 2) >> 8), byte(len(app1) + 2)}, app1...)
	if err := os.WriteFile(dst, append(append(append([]byte{}, b[:2]...), seg...), b[2:]...), 0o600); err != nil {
		t.Fatal(err)
	}
}

// redBox is the bounding box of a PNG's clearly red pixels (false when there are none).
func redBox(t *testing.T, path string) (image.Rectangle, bool) {
	t.Helper()
	img := readPNG(t, path)
	var box image.Rectangle
	found := false
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if r>>8 > 180 && g>>8 < 90 && b>>8 < 90 {
				p := image.Rect(x, y, x+1, y+1)
				if !found {
					box, found = p, true
				} else {
					box = box.Union(p)
				}
			}
		}
	}
	return box, found
}

func abs(n int) int { return max(n, -n) }

// readPNG decodes the PNG at path.
func readPNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// ffmpegOK runs ffmpeg with args (overwriting its output, quiet but for errors) and fails the test,
// naming what the run was for, when ffmpeg does.
func ffmpegOK(t *testing.T, what string, args ...string) {
	t.Helper()
	if out, err := exec.Command("ffmpeg", append([]string{"-y", "-loglevel", "error"}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("%s: ffmpeg %v: %v %s", what, args, err, out)
	}
}

// frameAt writes frame n (counted from 0) of a video to a PNG beside it and is the PNG's path.
func frameAt(t *testing.T, video string, n int) string {
	t.Helper()
	png := fmt.Sprintf("%s-%d.png", strings.TrimSuffix(video, filepath.Ext(video)), n)
	ffmpegOK(t, fmt.Sprintf("frame %d of %s", n, filepath.Base(video)), "-i", video, "-vf", "select=eq(n\\,"+strconv.Itoa(n)+")",
		"-frames:v", "1", "-update", "1", png)
	return png
}

// TestTransitions renders two shots of one picture (a red band on light blue) with each transition and
// reads the frames around the cut: a fade dips through black (the second shot's first frame dark,
// the first shot's last one darkened, its middle not), a cut does not; a slide brings the second
// shot in from the far side of its pan (the band a margin away from where the cut shows it at the
// cut, in the same place once the slide is over).
func TestTransitions(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ffmpeg")
	}
	testtool.Need(t, "ffmpeg")
	t.Parallel()
	dir := t.TempDir()
	pic := filepath.Join(dir, "band.png")
	ffmpegOK(t, "make the picture", "-f", "lavfi", "-i", "color=c=0x40a0ff:s=800x450,drawbox=x=380:y=0:w=40:h=450:color=0xff0000:t=fill", "-frames:v", "1", pic)
	size := Frame{800, 450}
	const fps = 25 // a draft's
	frames := map[Transition]map[int]string{}
	for _, tr := range []Transition{TransitionCut, TransitionFade, TransitionSlide} {
		v := &Video{Out: filepath.Join(dir, string(tr)+".mp4"), Frame: Frame{640, 360}, Duration: 2, Transition: tr, Quality: QualityDraft,
			Shots: []Shot{{Kind: ShotImage, Path: pic, Duration: 1, Size: size}, {Kind: ShotImage, Path: pic, Duration: 1, Size: size}}}
		if err := v.Render(t.Context()); err != nil {
			t.Fatalf("%s: %v", tr, err)
		}
		frames[tr] = map[int]string{}
		for _, n := range []int{fps / 2, fps - 1, fps, fps + 12} {
			frames[tr][n] = frameAt(t, v.Out, n)
		}
	}
	luma := func(tr Transition, n int) float64 { return sampledLuma(readPNG(t, frames[tr][n])) }
	middle, before, after := luma(TransitionCut, fps/2), luma(TransitionCut, fps-1), luma(TransitionCut, fps)
	if before < middle*0.8 || after < middle*0.8 {
		t.Errorf("cut: luma %.0f in the first shot's middle, %.0f and %.0f at the cut; want no dip", middle, before, after)
	}
	middle, before, after = luma(TransitionFade, fps/2), luma(TransitionFade, fps-1), luma(TransitionFade, fps)
	t.Logf("fade: luma %.0f in the first shot's middle, %.0f and %.0f at the cut", middle, before, after)
	if after > 10 || before > middle*0.5 || middle < 40 {
		t.Errorf("fade: luma %.0f in the first shot's middle, %.0f and %.0f at the cut; want a dip through black", middle, before, after)
	}
	bandX := func(tr Transition, n int) int {
		box, ok := redBox(t, frames[tr][n])
		if !ok {
			t.Fatalf("%s frame %d: no red band", tr, n)
		}
		return (box.Min.X + box.Max.X) / 2
	}
	margin := even(640*moves[0].margin) - 640 // how far move 0 pans
	cutAt, slideAt := bandX(TransitionCut, fps), bandX(TransitionSlide, fps)
	cutLater, slideLater := bandX(TransitionCut, fps+12), bandX(TransitionSlide, fps+12)
	t.Logf("band at %d (cut) and %d (slide) on the cut, %d and %d half a second later; margin %d", cutAt, slideAt, cutLater, slideLater, margin)
	if abs(cutAt-slideAt) < margin*3/4 || abs(cutLater-slideLater) > 4 {
		t.Errorf("slide: band at %d on the cut and %d later; a cut's at %d and %d: want it a margin (%d px) away on the cut, then the same",
			slideAt, slideLater, cutAt, cutLater, margin)
	}
}

// TestClipSlide renders a picture then a clip (a red band on light blue, landscape) in a portrait
// frame, cut and slide: under slide the clip enters with the sideways move (its band away from
// where the cut shows it, on the cut), then stands where the cut has it.
func TestClipSlide(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ffmpeg")
	}
	testtool.Need(t, "ffmpeg")
	t.Parallel()
	dir := t.TempDir()
	clip := filepath.Join(dir, "band.mp4")
	ffmpegOK(t, "make the clip", "-f", "lavfi", "-i",
		"color=c=0x40a0ff:s=800x450:r=50:d=2,drawbox=x=380:y=0:w=40:h=450:color=0xff0000:t=fill", "-pix_fmt", "yuv420p", clip)
	const fps = 25 // a draft's; the clip's own 50 fps is another rate on purpose
	at := map[Transition][2]int{}
	for _, tr := range []Transition{TransitionCut, TransitionSlide} {
		v := &Video{Out: filepath.Join(dir, string(tr)+".mp4"), Frame: Frame{360, 640}, Duration: 2, Transition: tr, Quality: QualityDraft,
			Shots: []Shot{{Kind: ShotTitle, Duration: 1}, {Kind: ShotClip, Path: clip, Duration: 1}}}
		if err := v.Render(t.Context()); err != nil {
			t.Fatalf("%s: %v", tr, err)
		}
		for i, n := range []int{fps + 1, fps + 15} {
			box, ok := redBox(t, frameAt(t, v.Out, n))
			if !ok {
				t.Fatalf("%s frame %d: no red band", tr, n)
			}
			x := at[tr]
			x[i] = (box.Min.X + box.Max.X) / 2
			at[tr] = x
		}
	}
	t.Logf("band at %v (cut) and %v (slide), on the cut and half a second later", at[TransitionCut], at[TransitionSlide])
	if abs(at[TransitionCut][0]-at[TransitionSlide][0]) < 30 || abs(at[TransitionCut][1]-at[TransitionSlide][1]) > 4 {
		t.Errorf("slide: band at %v, a cut's at %v: want it away from the cut's on the cut, then the same", at[TransitionSlide], at[TransitionCut])
	}
}
