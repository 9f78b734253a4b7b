// Package render composes videos and images with ffmpeg: the local renderer of the generators.
//
// A Video is a timeline the caller has planned: shots (an image with a slow pan or zoom, a clip
// trimmed to its time, or a title card when there is no material), captions timed to the spoken
// sentences, a narration and a background music track mixed under it, in the frame of the target
// platform. Render turns it into an ffmpeg run of the picture (H.264 High profile) and, beside it,
// the sound's runs (audio.go: mixed and measured, then normalised and encoded to AAC at 48 kHz),
// put together in an MP4 that starts playing before it is loaded (encode.go). Still renders
// a still (a cover) of an aspect ratio. FontFor picks a font that draws every character of the
// text, so a caption is refused rather than drawn as boxes.
//
// The package knows nothing of jobs, users or storage: it takes local files and writes one. Plan
// (plan.go) turns a script, sentence timings and material into a Video.
package render

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/reelforge/reelforge/internal/proc"
)

// Frame is a width and height in pixels.
type Frame struct{ W, H int }

// platformAspect is the frame of a platform: 9:16 for douyin, kuaishou and the default, 3:4 for
// xiaohongshu, 16:9 for bilibili and youtube.
func platformAspect(platform string) string {
	switch strings.ToLower(strings.TrimSpace(platform)) {
	case "xiaohongshu", "rednote", "xhs":
		return "3:4"
	case "bilibili", "youtube":
		return "16:9"
	}
	return "9:16"
}

// ImageFrame is the size of a still of aspect ratio "w:h" (default: the platform's, with covers of
// xiaohongshu 3:4), its long side 1440 pixels.
func ImageFrame(aspect, platform string) (Frame, error) {
	if strings.TrimSpace(aspect) == "" {
		aspect = platformAspect(platform)
	}
	a, b, ok := strings.Cut(aspect, ":")
	w, err1 := strconv.ParseFloat(strings.TrimSpace(a), 64)
	h, err2 := strconv.ParseFloat(strings.TrimSpace(b), 64)
	if !ok || err1 != nil || err2 != nil || w <= 0 || h <= 0 || w/h > 4 || h/w > 4 {
		return Frame{}, fmt.Errorf("render: aspect ratio %q is not w:h (e.g. 3:4, 16:9)", aspect)
	}
	const long = 1440
	if w >= h {
		return Frame{long, even(long * h / w)}, nil
	}
	return Frame{even(long * w / h), long}, nil
}

func even(f float64) int { return int(f/2+0.5) * 2 }

// AspectRatios are the frames a run may ask for (its aspect_ratio input).
var AspectRatios = []string{"9:16", "3:4", "4:5", "1:1", "16:9"}

// VideoFrame is the size of a video of aspect ratio "w:h" (default: the platform's) at quality q:
// its short side 1080 pixels (720 for a draft).
func VideoFrame(aspect, platform string, q Quality) (Frame, error) {
	f, err := ImageFrame(aspect, platform)
	if err != nil {
		return Frame{}, err
	}
	short := q.shortSide()
	if f.W >= f.H {
		return Frame{even(float64(short*f.W) / float64(f.H)), short}, nil
	}
	return Frame{short, even(float64(short*f.H) / float64(f.W))}, nil
}

// Shot kinds.
const (
	ShotImage = "image"
	ShotClip  = "clip"
	ShotTitle = "title" // no material: a card with Text
)

// Shot is one stretch of the timeline.
type Shot struct {
	Kind     string
	Path     string  // the image or clip (Kind image or clip)
	Text     string  // the card's text (Kind title)
	Duration float64 // seconds
	// Move is the shot's variation of its material (moves.go): which way an image pans and how
	// tight it is cropped, how tight a clip is; a picture shown again gets another.
	Move   int
	Focus  Focus   // the material's focal point, kept in every crop
	Size   Frame   // a picture's own size in pixels, upright (zero: unknown), where Focus lies in a crop
	Color  string  // a title card's colour (default Video.Background)
	Offset float64 // where in a clip the shot starts (seconds)
	Sound  bool    // the clip has its own sound (mixed by Video.ClipAudio)
}

// Caption is a text shown from From to To seconds, its spoken words highlighted in turn.
type Caption struct {
	Text     string
	From, To float64
	Words    []Word // when each word of Text is said (nil: spread over From..To by length)
}

// Video is a planned timeline. Shots are laid end to end and should add up to Duration.
type Video struct {
	Out      string // the MP4 file to write
	Frame    Frame
	Duration float64
	Shots    []Shot
	Captions []Caption
	// Narration is the voice track ("" for none); Tempo speeds it up (>1) to fit Duration.
	Narration string
	Tempo     float64
	// Music is the background track ("" for none), looped to the length and mixed under the voice.
	Music string
	Mark  string // a visible text mark in the top corner ("" for none)
	Font  string // the font file of every text (Cover's Glyphs.Font)
	// Emoji are the characters drawn in colour from EmojiFont (Cover): a caption or title card
	// holding one is drawn as a picture (textPicture) rather than by drawtext.
	EmojiFont string
	Emoji     []rune
	// Background is the colour of title cards and letterboxing, e.g. 0x1f2937.
	Background string
	Quality    Quality    // "" is standard
	Transition Transition // between shots; "" is a short fade
	ClipAudio  ClipAudio  // a clip's own sound; "" is ducked under the narration
	Tools      Tools
	// Cover is a JPEG to write of one of the video's frames, not a dark one (CoverTimes), "" for
	// none; CoverAt is the time it shows (set by Render).
	Cover   string
	CoverAt float64
	// Sound is what Render did with the sound (set by Render).
	Sound Sound
}

// Render writes v.Out (through its partial name: publish).
func (v *Video) Render(ctx context.Context) error {
	if len(v.Shots) == 0 || v.Duration <= 0 || v.Frame.W <= 0 || v.Frame.H <= 0 {
		return errors.New("render: a video needs shots, a duration and a frame")
	}
	if v.Background == "" {
		v.Background = "0x1f2937"
	}
	work, err := os.MkdirTemp("", "reelforge-render-")
	if err != nil {
		return fmt.Errorf("render: working folder: %w", err)
	}
	defer os.RemoveAll(work)
	// The sound needs nothing of the picture: it is mixed, measured and encoded from the start,
	// beside the drawing of the captions and the picture's run (soundRun).
	sound := v.startSound(ctx, work)
	defer sound.stop() // before the working folder goes: the sound's runs write in it
	emoji, err := v.emoji()
	if err != nil {
		return err
	}
	args := []string{"-y", "-hide_banner", "-loglevel", "error", "-nostdin"}
	var graph []string
	var labels string
	W, H := v.Frame.W, v.Frame.H
	// Each picture is read once, however many shots show it: a photo of a phone is 12 megapixels,
	// and its decoding and first scaling cost more than the rest of a shot's chain. Its inputs
	// come first; each shot takes one of its copies (split).
	photos := v.photoCopies()
	for _, ph := range photos {
		args = append(args, "-i", ph.path)
		graph = append(graph, fmt.Sprintf("[%d:v]scale=%d:%d:force_original_aspect_ratio=increase,setsar=1,format=yuv420p,split=%d%s",
			ph.input, ph.w, ph.h, len(ph.labels), strings.Join(ph.labels, "")))
	}
	in := len(photos)
	fps := v.Quality.FPS()
	for i, s := range v.Shots {
		d := s.Duration
		frames := max(int(d*float64(fps)+0.5), 1)
		ds := ff(d)
		label := fmt.Sprintf("[s%d]", i)
		first, last := i == 0, i == len(v.Shots)-1
		switch s.Kind {
		case ShotImage:
			// Scaled and cropped once (the image is one frame) to the move's size around the focal
			// point, repeated, then moved: a pan is a moving crop (cheap at 1080p, where zoompan's
			// scaling of every frame would cost more than the encoding).
			m := imageMove(v.Frame, s)
			graph = append(graph, fmt.Sprintf("%sscale=%d:%d:force_original_aspect_ratio=increase,crop=%d:%d:x='%s':y='%s',setsar=1,"+
				"loop=loop=%d:size=1:start=0,setpts=N/(%d*TB),crop=%d:%d:x='%s':y='%s'%s%s",
				photos.take(s.Path), m.W, m.H, m.W, m.H, centredExpr(s.Focus.x(), "w"), centredExpr(s.Focus.y(), "h"), frames-1, fps, W, H,
				m.X(frames, v.Transition == TransitionSlide && !first), m.Y(frames), v.transition(d, first, last), label))
			labels += label
			continue // no input of its own
		case ShotClip:
			args = append(args, "-stream_loop", "-1", "-ss", ff(s.Offset), "-t", ds, "-i", s.Path)
			// The part of the clip the frame shows (the frame's size in a picture of the clip scaled
			// to cover the move's size) is cut out first and then scaled to the frame: scaling the
			// whole picture and cropping after scaled every frame of a 1280x720 clip to 3413x1920
			// (a third more CPU for the clip's shots).
			m := clipMove(v.Frame, s.Move)
			graph = append(graph, fmt.Sprintf("[%d:v]crop=w='%d*min(iw/%d,ih/%d)':h='%d*min(iw/%d,ih/%d)':x='%s':y='%s',scale=%d:%d,setsar=1,fps=%d,"+
				"trim=duration=%s,setpts=PTS-STARTPTS,format=yuv420p%s%s", in, W, m.W, m.H, H, m.W, m.H, clipX(s.Focus, fps, v.Transition == TransitionSlide && !first), centredExpr(s.Focus.y(), "h"), W, H, fps, ds,
				v.transition(d, first, last), label))
		default: // title card
			color := s.Color
			if color == "" {
				color = v.Background
			}
			args = append(args, "-f", "lavfi", "-i", fmt.Sprintf("color=c=%s:s=%dx%d:r=%d:d=%s", color, W, H, fps, ds))
			chain := fmt.Sprintf("[%d:v]format=yuv420p", in)
			text := Wrap(s.Text, columns(W, fontSize(v.Frame)*13/10), 6)
			switch {
			case strings.TrimSpace(s.Text) == "":
			case strings.ContainsFunc(text, emoji.has): // drawn as a picture, overlaid on the card
				pic := filepath.Join(work, fmt.Sprintf("card-%02d.png", i))
				if _, _, err := textPicture(pic, text, v.Font, emoji, textStyle{size: fontSize(v.Frame) * 13 / 10, spacing: 14}); err != nil {
					return err
				}
				args = append(args, "-loop", "1", "-framerate", strconv.Itoa(fps), "-t", ds, "-i", pic)
				in++
				chain += fmt.Sprintf("[card%d];[card%d][%d:v]overlay=x=(W-w)/2:y=(H-h)/2,format=yuv420p", i, i, in)
			default:
				file, err := writeText(work, fmt.Sprintf("card-%02d.txt", i), text)
				if err != nil {
					return err
				}
				chain += fmt.Sprintf(",drawtext=fontfile=%s:textfile=%s:fontsize=%d:fontcolor=white:line_spacing=14:x=(w-text_w)/2:y=(h-text_h)/2",
					v.Font, file, fontSize(v.Frame)*13/10)
			}
			graph = append(graph, chain+v.transition(d, first, last)+label)
		}
		in++
		labels += label
	}
	video := "[base]"
	graph = append(graph, fmt.Sprintf("%sconcat=n=%d:v=1:a=0%s", labels, len(v.Shots), video))
	var chain []string
	var pictures []string // overlays after chain: the captions' track
	fs := fontSize(v.Frame)
	// The caption pages and their highlighted words are two tracks of pictures (captions.go).
	if pages, words, err := v.captionTracks(work, emoji); err != nil {
		return err
	} else if pages != "" {
		for _, list := range []string{pages, words} {
			args = append(args, "-f", "concat", "-safe", "0", "-i", list)
			pictures = append(pictures, fmt.Sprintf("[%d:v]overlay=x=(W-w)/2:y=H*0.74-h/2:eof_action=pass", in))
			in++
		}
	}
	if v.Mark != "" {
		file, err := writeText(work, "mark.txt", v.Mark)
		if err != nil {
			return err
		}
		chain = append(chain, fmt.Sprintf("drawtext=fontfile=%s:textfile=%s:fontsize=%d:fontcolor=white@0.8:box=1:boxcolor=black@0.35:"+
			"boxborderw=10:x=w-text_w-32:y=48", v.Font, file, fs))
	}
	if len(chain) > 0 {
		graph = append(graph, video+strings.Join(chain, ",")+"[v]")
		video = "[v]"
	}
	for i, p := range pictures {
		out := fmt.Sprintf("[vp%d]", i)
		graph = append(graph, video+p+out)
		video = out
	}
	dur := ff(v.Duration)
	// The cover's candidates are frames of the picture, made keyframes as it is encoded, so that
	// reading one afterwards decodes that frame alone (coverFrames). Taking them from the
	// picture's own run instead (a split to a second output) made ffmpeg hold about 200 frames
	// (1 GB at 1080p) while that output waited for its next frame, and cost more than a second
	// of a 30 s render.
	var covers []coverFrame
	if v.Cover != "" {
		covers = v.coverFrames(work)
		times := make([]string, len(covers))
		for i, c := range covers {
			// Rounded down to the millisecond: at or before the frame's own time, after the one before.
			times[i] = ff(math.Floor(c.at*1000) / 1000)
		}
		args = append(args, "-force_key_frames", strings.Join(times, ","))
	}
	// The shots' chains are independent: filter them on every core (about a third faster on two).
	picture := filepath.Join(work, "picture.mp4")
	args = append(args, "-filter_complex_threads", strconv.Itoa(runtime.NumCPU()),
		"-filter_complex", strings.Join(graph, ";"), "-map", video, "-an", "-t", dur)
	args = append(append(args, v.videoArgs()...), picture)
	if err := v.Tools.Run(ctx, "ffmpeg", args...); err != nil {
		return err
	}
	// The cover's frames are read while the sound is awaited and the video muxed; the run is
	// waited for whatever the mux comes to, before the working folder goes.
	var cover errgroup.Group
	if v.Cover != "" {
		cover.Go(func() error { return v.writeCover(ctx, picture, covers) })
	}
	err = v.mux(ctx, picture, sound, dur)
	if cerr := cover.Wait(); err == nil {
		err = cerr
	}
	return err
}

// mux writes v.Out from the encoded picture and v's sound once it is made, without encoding the
// picture again; a silent video gets a silent track (players and platforms expect one).
func (v *Video) mux(ctx context.Context, picture string, sound *soundRun, dur string) error {
	audio, err := sound.wait()
	if err != nil {
		return err
	}
	mux := []string{"-y", "-hide_banner", "-loglevel", "error", "-nostdin", "-i", picture}
	if audio == "" {
		mux = append(mux, "-f", "lavfi", "-t", dur, "-i", fmt.Sprintf("anullsrc=r=%d:cl=stereo", AudioRate), "-map", "0:v", "-map", "1:a", "-c:v", "copy")
		mux = append(mux, audioArgs()...)
	} else {
		mux = append(mux, "-i", audio, "-map", "0:v", "-map", "1:a", "-c", "copy")
	}
	return publish(v.Out, func(tmp string) error {
		return v.Tools.Run(ctx, "ffmpeg", append(append(mux, "-t", dur), append(faststart, tmp)...)...)
	})
}

// soundRun is a video's sound being made beside its picture: mixed and measured (mixAudio), then
// normalised and encoded to AAC by a run of its own. ffmpeg 5.1 filters and encodes sound on the
// thread that runs the picture's filter graph, where the sound's work held the picture back; in
// processes of their own, started before the picture's, they run on the other core.
type soundRun struct {
	stop func() // cancels the runs and waits for them
	done chan soundResult
	res  *soundResult
}

type soundResult struct {
	file string // the encoded sound, "" for a silent video
	err  error
}

// startSound starts making v's sound in work.
func (v *Video) startSound(ctx context.Context, work string) *soundRun {
	ctx, cancel := context.WithCancel(ctx)
	r := &soundRun{done: make(chan soundResult, 1)}
	go func() {
		mix, normalize, err := v.mixAudio(ctx, work)
		if err != nil || mix == "" {
			r.done <- soundResult{err: err}
			return
		}
		out := filepath.Join(work, "sound.m4a")
		args := []string{"-y", "-hide_banner", "-loglevel", "error", "-nostdin", "-i", mix, "-af", normalize, "-t", ff(v.Duration)}
		if err := v.Tools.Run(ctx, "ffmpeg", append(append(args, audioArgs()...), out)...); err != nil {
			r.done <- soundResult{err: err}
			return
		}
		r.done <- soundResult{file: out}
	}()
	r.stop = func() {
		cancel()
		r.wait()
	}
	return r
}

// wait is the encoded sound ("" for a silent video) once it is made.
func (r *soundRun) wait() (string, error) {
	if r.res == nil {
		res := <-r.done
		r.res = &res
	}
	return r.res.file, r.res.err
}

// photoCopy is a picture of a video's shots, read once: scaled to cover the largest crop of its
// shots (w x h) and split into a copy (labels) for each shot.
type photoCopy struct {
	path   string
	input  int // its input's number
	w, h   int
	labels []string
	taken  int
}

type photoCopies []*photoCopy

// photoCopies are v's pictures in the order of their first shot.
func (v *Video) photoCopies() photoCopies {
	var out photoCopies
	byPath := map[string]*photoCopy{}
	for _, s := range v.Shots {
		if s.Kind != ShotImage {
			continue
		}
		ph := byPath[s.Path]
		if ph == nil {
			ph = &photoCopy{path: s.Path, input: len(out)}
			byPath[s.Path] = ph
			out = append(out, ph)
		}
		m := imageMove(v.Frame, s) // every move's crop has the frame's aspect
		ph.w, ph.h = max(ph.w, m.W), max(ph.h, m.H)
		ph.labels = append(ph.labels, fmt.Sprintf("[p%d_%d]", ph.input, len(ph.labels)))
	}
	return out
}

// take is the next unused copy of the picture at path.
func (ps photoCopies) take(path string) string {
	for _, ph := range ps {
		if ph.path == path {
			ph.taken++
			return ph.labels[ph.taken-1]
		}
	}
	panic("render: a shot's picture is not among the video's") // photoCopies lists every one
}

// columns is how many columns of Wrap (a Latin letter one, a Han character two) fit in 90% of a
// frame width w at font size fs: a Latin letter is about half fs wide.
func columns(w, fs int) int { return max(w*90/(fs*50), 8) }

// fontSize is the caption size of a frame: about 5.8% of its short side.
func fontSize(f Frame) int { return max(min(f.W, f.H)*58/1000, 16) }

// Still is a cover image.
type Still struct {
	Out   string // the PNG file to write
	Frame Frame
	Image string // the background picture ("" for a plain card)
	Focus Focus  // the picture's focal point, kept in the crop
	Title string
	Font  string
	// EmojiFont and Emoji: as Video's; a title holding an emoji is drawn as a picture.
	EmojiFont string
	Emoji     []rune
	Mark      string
	Tools     Tools
}

// Render writes s.Out (through its partial name: publish): the picture cropped to the frame (or a
// card), with the title in a band.
func (s *Still) Render(ctx context.Context) error {
	work, err := os.MkdirTemp("", "reelforge-still-")
	if err != nil {
		return fmt.Errorf("render: working folder: %w", err)
	}
	defer os.RemoveAll(work)
	W, H := s.Frame.W, s.Frame.H
	args := []string{"-y", "-hide_banner", "-loglevel", "error", "-nostdin"}
	chain := ""
	if s.Image != "" {
		args = append(args, "-i", s.Image)
		chain = fmt.Sprintf("[0:v]scale=%d:%d:force_original_aspect_ratio=increase,crop=%d:%d:x='%s':y='%s',setsar=1",
			W, H, W, H, centredExpr(s.Focus.x(), "w"), centredExpr(s.Focus.y(), "h"))
	} else {
		args = append(args, "-f", "lavfi", "-i", fmt.Sprintf("color=c=0x1f2937:s=%dx%d:d=1", W, H))
		chain = "[0:v]null"
	}
	fs := min(W, H) * 75 / 1000
	emoji, err := (&Video{EmojiFont: s.EmojiFont, Emoji: s.Emoji}).emoji()
	if err != nil {
		return err
	}
	title := Wrap(s.Title, columns(W, fs), 4)
	switch {
	case strings.TrimSpace(s.Title) == "":
	case strings.ContainsFunc(title, emoji.has): // drawn as a picture, overlaid
		pic := filepath.Join(work, "title.png")
		if _, _, err := textPicture(pic, title, s.Font, emoji, textStyle{size: fs, spacing: 16, pad: 28, box: color.NRGBA{A: 128}}); err != nil {
			return err
		}
		args = append(args, "-i", pic)
		chain += "[bg];[bg][1:v]overlay=x=(W-w)/2:y=H*0.72-h/2"
	default:
		file, err := writeText(work, "title.txt", title)
		if err != nil {
			return err
		}
		chain += fmt.Sprintf(",drawtext=fontfile=%s:textfile=%s:fontsize=%d:fontcolor=white:line_spacing=16:box=1:boxcolor=black@0.5:"+
			"boxborderw=28:x=(w-text_w)/2:y=h*0.72-text_h/2", s.Font, file, fs)
	}
	if s.Mark != "" {
		file, err := writeText(work, "mark.txt", s.Mark)
		if err != nil {
			return err
		}
		chain += fmt.Sprintf(",drawtext=fontfile=%s:textfile=%s:fontsize=%d:fontcolor=white@0.8:box=1:boxcolor=black@0.35:boxborderw=10:x=w-text_w-32:y=48",
			s.Font, file, fs/2)
	}
	args = append(args, "-filter_complex", chain+"[v]", "-map", "[v]", "-frames:v", "1", "-update", "1")
	return publish(s.Out, func(tmp string) error { return s.Tools.Run(ctx, "ffmpeg", append(args, tmp)...) })
}

// emoji opens the colour emoji font for the characters v.Emoji (nil when there are none).
func (v *Video) emoji() (*emojiFont, error) {
	if len(v.Emoji) == 0 || v.EmojiFont == "" {
		return nil, nil
	}
	return openEmoji(v.EmojiFont, v.Emoji)
}

// partialTag marks the name a render writes before its file is whole: "v.mp4" is written as
// "v.partial.mp4" (the extension stays last: ffmpeg picks the container by it) and renamed to
// "v.mp4" only once the tool succeeded. So a render cut off anyhow (a killed plugin, a cancelled
// run, a full disk) never leaves a file at the final name, where a creator, the asset recording
// or a download would take it for a result.
const partialTag = ".partial"

// partialName is the name a render of out writes first, in out's folder (a rename within one
// folder is atomic).
func partialName(out string) string {
	ext := filepath.Ext(out)
	return strings.TrimSuffix(out, ext) + partialTag + ext
}

// IsPartial reports whether a file name is a partialName: a render in progress, or the leftover of
// one killed with its process (the host removes those at start, generators.RemovePartials).
func IsPartial(name string) bool {
	base := filepath.Base(name)
	return strings.HasSuffix(strings.TrimSuffix(base, filepath.Ext(base)), partialTag)
}

// publish runs write on the partialName of out and renames it to out once write succeeded. When
// write fails, what it wrote is removed and out is left as it was.
func publish(out string, write func(tmp string) error) error {
	tmp := partialName(out)
	if err := write(tmp); err != nil {
		_ = os.Remove(tmp) // a cut-off file is no result; write's error is the one to report
		return err
	}
	if err := os.Rename(tmp, out); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("render: publish %s: %w", filepath.Base(out), err)
	}
	return nil
}

func writeText(dir, name, text string) (string, error) {
	p := filepath.Join(dir, name)
	// drawtext expands '%' sequences in text files too: double it.
	if err := os.WriteFile(p, []byte(strings.ReplaceAll(text, "%", "%%")), 0o600); err != nil {
		return "", fmt.Errorf("render: write %s: %w", name, err)
	}
	return p, nil
}

// ff formats seconds for a filter graph.
func ff(f float64) string { return strconv.FormatFloat(f, 'f', 3, 64) }

// ToolError is a tool that failed: the program, and the end of what it wrote to stderr.
type ToolError struct {
	Program string
	Err     error
	Stderr  string
}

func (e *ToolError) Error() string { return e.Program + ": " + e.Err.Error() + ": " + e.Stderr }
func (e *ToolError) Unwrap() error { return e.Err }

// Tools runs the programs of renders (ffmpeg, espeak-ng): each dies with this process
// (internal/proc) and is recorded in Children while it runs. The zero Tools records nothing.
type Tools struct {
	Children proc.Registry
}

// Run runs a program; a failure is a *ToolError (or ctx's error when ctx ended).
func (t Tools) Run(ctx context.Context, program string, args ...string) error {
	_, _, err := t.run(ctx, program, args...)
	return err
}

// Stderr runs a program and returns what it wrote to stderr (ffmpeg's reports).
func (t Tools) Stderr(ctx context.Context, program string, args ...string) (string, error) {
	_, stderr, err := t.run(ctx, program, args...)
	return stderr, err
}

func (t Tools) run(ctx context.Context, program string, args ...string) (string, string, error) {
	cmd := proc.Command(ctx, program, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := t.Children.Run(cmd); err != nil {
		if ctx.Err() != nil {
			return "", "", ctx.Err()
		}
		tail := strings.TrimSpace(stderr.String())
		if len(tail) > 800 {
			tail = tail[len(tail)-800:]
		}
		return "", "", &ToolError{Program: program, Err: err, Stderr: tail}
	}
	return stdout.String(), stderr.String(), nil
}
