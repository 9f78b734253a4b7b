package render

import (
	"context"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// What a post needs beside its video: the captions as files (WebVTT for a <track>, SRT for the
// platforms' uploaders) and a cover picked from the video's frames.

// ShownCaptions are the captions as Render burns them in: each broken into balanced pages of at
// most three lines of the frame's width, with their words' times, so the caption files say exactly
// what the picture shows, when.
func (v *Video) ShownCaptions() []Caption {
	pages := v.shownPages()
	out := make([]Caption, len(pages))
	for i, p := range pages {
		out[i] = p.Caption
	}
	return out
}

// WebVTT is captions as a WebVTT file: a cue per caption, its lines kept, and a timestamp tag
// before each word said after the cue's start (WebVTT's karaoke-style cue timestamps, e.g.
// "The <00:00:01.200>harbour"), so a player can show the word being said as the video does.
func WebVTT(cs []Caption) string {
	var b strings.Builder
	b.WriteString("WEBVTT\n")
	esc := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	for i, c := range cs {
		text := cueText(c.Text)
		var cue strings.Builder
		pos, last := 0, c.From
		for _, w := range c.Words {
			at := strings.Index(text[pos:], w.Text)
			if w.Text == "" || at < 0 {
				continue
			}
			cue.WriteString(esc.Replace(text[pos : pos+at]))
			pos += at
			// A timestamp must fall inside its cue, after the one before it, at a millisecond.
			if ms := math.Round(w.Start*1000) / 1000; ms > last && ms < c.To {
				fmt.Fprintf(&cue, "<%s>", cueTime(ms, '.'))
				last = ms
			}
			cue.WriteString(esc.Replace(w.Text))
			pos += len(w.Text)
		}
		cue.WriteString(esc.Replace(text[pos:]))
		fmt.Fprintf(&b, "\n%d\n%s --> %s\n%s\n", i+1, cueTime(c.From, '.'), cueTime(c.To, '.'), cue.String())
	}
	return b.String()
}

// SRT is captions as a SubRip file: the pages as drawn (SubRip has no word times).
func SRT(cs []Caption) string {
	var b strings.Builder
	for i, c := range cs {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%d\n%s --> %s\n%s\n", i+1, cueTime(c.From, ','), cueTime(c.To, ','), cueText(c.Text))
	}
	return b.String()
}

// cueText keeps a caption's line breaks but no blank line (which would end the cue).
func cueText(s string) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

// cueTime is seconds as HH:MM:SS.mmm (sep ',' for SRT).
func cueTime(sec float64, sep byte) string {
	ms := int64(max(sec, 0)*1000 + 0.5)
	return fmt.Sprintf("%02d:%02d:%02d%c%03d", ms/3600000, ms/60000%60, ms/1000%60, sep, ms%1000)
}

// WriteText writes a text file through its partial name (publish), as the renders write theirs.
func WriteText(path, text string) error {
	return publish(path, func(tmp string) error {
		if err := os.WriteFile(tmp, []byte(text), 0o640); err != nil {
			return fmt.Errorf("render: write %s: %w", filepath.Base(path), err)
		}
		return nil
	})
}

// darkLuma is the mean brightness (0-255) under which a frame is too dark to be a cover: a fade
// from black, a dark clip's first frame.
const darkLuma = 28

// CoverTimes are the moments of v a cover is taken from, in order of preference: the middle of the
// first shot (the title card, or the first picture), then half and seven tenths of the way
// through (later rather than earlier: a dark stretch is more often an opening).
func (v *Video) CoverTimes() []float64 {
	first := v.Duration
	if len(v.Shots) > 0 {
		first = v.Shots[0].Duration
	}
	var out []float64
	for _, at := range []float64{min(first/2, v.Duration/2), v.Duration / 2, v.Duration * 0.7} {
		if len(out) == 0 || math.Abs(out[len(out)-1]-at) > 0.2 {
			out = append(out, at)
		}
	}
	return out
}

// coverFrame is a candidate frame of the cover: the video's frame at a time, and the JPEG written
// of it.
type coverFrame struct {
	at   float64
	file string
}

// coverFrames are the candidates of v's cover in work (CoverTimes: the frame at or just after each
// time), at their frames' own times.
func (v *Video) coverFrames(work string) []coverFrame {
	fps := float64(v.Quality.FPS())
	last := max(int(math.Round(v.Duration*fps))-1, 0)
	var out []coverFrame
	for _, at := range v.CoverTimes() {
		n := min(int(math.Ceil(at*fps-1e-6)), last)
		out = append(out, coverFrame{at: float64(n) / fps, file: filepath.Join(work, fmt.Sprintf("cover-%d.jpg", len(out)+1))})
	}
	return out
}

// writeCover writes the candidates' JPEGs from the picture, whose encoder made each of them a
// keyframe, in one ffmpeg run, and then picks the cover (pickCover). Each input is sought to just
// after its keyframe without accurate seeking, so the run starts at that keyframe and decodes
// one frame of it.
func (v *Video) writeCover(ctx context.Context, picture string, candidates []coverFrame) error {
	args := []string{"-y", "-hide_banner", "-loglevel", "error", "-nostdin"}
	for _, c := range candidates {
		args = append(args, "-noaccurate_seek", "-ss", ff(c.at+0.25/float64(v.Quality.FPS())), "-i", picture)
	}
	for i, c := range candidates {
		args = append(args, "-map", fmt.Sprintf("%d:v", i), "-frames:v", "1", "-q:v", "3", "-update", "1", c.file)
	}
	if err := v.Tools.Run(ctx, "ffmpeg", args...); err != nil {
		return err
	}
	return v.pickCover(candidates)
}

// pickCover writes v.Cover from the first candidate that is not dark; when every one is, the
// brightest. It sets v.CoverAt to its time.
func (v *Video) pickCover(candidates []coverFrame) error {
	best, bestLuma := -1, -1.0
	for i, c := range candidates {
		if _, err := os.Stat(c.file); errors.Is(err, fs.ErrNotExist) {
			continue // a time past the last frame the encoder kept
		}
		luma, err := meanLuma(c.file)
		if err != nil {
			return err
		}
		if luma > bestLuma {
			best, bestLuma = i, luma
		}
		if luma >= darkLuma {
			break
		}
	}
	if best < 0 {
		return fmt.Errorf("render: no cover frame was written")
	}
	b, err := os.ReadFile(candidates[best].file)
	if err != nil {
		return fmt.Errorf("render: cover: %w", err)
	}
	v.CoverAt = candidates[best].at
	return publish(v.Cover, func(tmp string) error {
		if err := os.WriteFile(tmp, b, 0o640); err != nil {
			return fmt.Errorf("render: write %s: %w", filepath.Base(v.Cover), err)
		}
		return nil
	})
}

// meanLuma is the mean brightness of a JPEG, sampled on a grid of about 64x64 points.
func meanLuma(path string) (float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	img, err := jpeg.Decode(f)
	if err != nil {
		return 0, fmt.Errorf("render: the cover %s is no JPEG: %w", filepath.Base(path), err)
	}
	return sampledLuma(img), nil
}

func sampledLuma(img image.Image) float64 {
	r := img.Bounds()
	sx, sy := max(r.Dx()/64, 1), max(r.Dy()/64, 1)
	var sum float64
	n := 0
	for y := r.Min.Y; y < r.Max.Y; y += sy {
		for x := r.Min.X; x < r.Max.X; x += sx {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			sum += (0.299*float64(cr) + 0.587*float64(cg) + 0.114*float64(cb)) / 257
			n++
		}
	}
	return sum / float64(max(n, 1))
}
