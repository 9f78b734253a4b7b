package generators

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/reelforge/reelforge/internal/proc"
	"github.com/reelforge/reelforge/internal/sentence"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// Video geometry and limits of the local renderer.
const (
	videoWidth     = 720
	videoHeight    = 1280
	videoFPS       = 25
	maxVideoSecs   = 180.0
	defaultSecs    = 5.0
	maxCaptions    = 40
	maxSpeechRunes = 5000
	maxImages      = 20
	// Mark is the visible text mark on videos of free users.
	Mark = "Reelforge"
)

// ---------------------------------------------------------------- speech

var voiceName = regexp.MustCompile(`^[A-Za-z0-9+_-]{1,40}$`)

// voiceFor picks an espeak-ng voice: the payload's voice when it is a plain name, else one for the
// language (Chinese uses Mandarin), else English.
func voiceFor(payload map[string]any) string {
	if v := str(payload, "voice"); voiceName.MatchString(v) {
		return v
	}
	lang := strings.ToLower(str(payload, "language"))
	switch {
	case strings.HasPrefix(lang, "zh"), lang == "cmn":
		return "cmn"
	case voiceName.MatchString(lang):
		return lang
	}
	return "en"
}

func (d *Dispatcher) speech(ctx context.Context, lj *localJob) (map[string]any, error) {
	text := spokenText(str(lj.payload, "text", "script", "prompt", "summary", "topic", "title"), maxSpeechRunes)
	if text == "" {
		return nil, errcode.Invalid("payload.text", "speech needs a text or a script")
	}
	if voiceFor(lj.payload) == "en" && hasHan(text) {
		lj.payload["language"] = "zh"
	}
	abs, rel, link, err := d.assetPath(lj, "speech", "wav")
	if err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp("", "reelforge-speech-*.txt")
	if err != nil {
		return nil, errcode.E("generators.speech", errcode.ExternalService, "the speech text could not be written", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(text); err != nil {
		tmp.Close()
		return nil, errcode.E("generators.speech", errcode.ExternalService, "the speech text could not be written", err)
	}
	tmp.Close()
	voice := voiceFor(lj.payload)
	speed := 165
	if s, ok := num(lj.payload, "speed"); ok && s >= 80 && s <= 400 {
		speed = int(s)
	}
	run := func(voice string) error {
		return d.runTool(ctx, "espeak-ng", "-v", voice, "-s", strconv.Itoa(speed), "-w", abs, "-f", tmp.Name())
	}
	if err := run(voice); err != nil {
		if ctx.Err() != nil || voice == "en" {
			return nil, err
		}
		voice = "en" // an unknown voice: speak with the default rather than fail
		if err := run(voice); err != nil {
			return nil, err
		}
	}
	dur, err := wavDuration(abs)
	if err != nil {
		return nil, errcode.E("generators.speech", errcode.ExternalService, "espeak-ng wrote no usable WAV file", err)
	}
	size := fileSize(abs)
	return map[string]any{"audio_url": link, "file_path": rel, "file_type": "audio", "format": "wav", "file_size": size,
		"duration": round(dur), "voice": voice, "tool": "espeak-ng", "characters": len([]rune(text))}, nil
}

// wavDuration reads a RIFF/WAVE file's duration from its fmt chunk and the bytes of its data chunk
// (the file size when the header's size is a streaming placeholder).
func wavDuration(path string) (float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	var hdr [12]byte
	if _, err := io.ReadFull(f, hdr[:]); err != nil || string(hdr[0:4]) != "RIFF" || string(hdr[8:12]) != "WAVE" {
		return 0, fmt.Errorf("generators: %s is not a WAV file", filepath.Base(path))
	}
	var byteRate uint32
	pos := int64(12)
	for {
		var ch [8]byte
		if _, err := io.ReadFull(f, ch[:]); err != nil {
			return 0, fmt.Errorf("generators: no data chunk in %s: %w", filepath.Base(path), err)
		}
		size := int64(binary.LittleEndian.Uint32(ch[4:8]))
		pos += 8
		switch string(ch[0:4]) {
		case "fmt ":
			var fmtc [16]byte
			if _, err := io.ReadFull(f, fmtc[:]); err != nil {
				return 0, err
			}
			byteRate = binary.LittleEndian.Uint32(fmtc[8:12])
			if _, err := f.Seek(pos+size+size%2, io.SeekStart); err != nil {
				return 0, err
			}
		case "data":
			if byteRate == 0 {
				return 0, fmt.Errorf("generators: no fmt chunk before the data of %s", filepath.Base(path))
			}
			if left := st.Size() - pos; size == 0 || size > left {
				size = left
			}
			return float64(size) / float64(byteRate), nil
		default:
			if _, err := f.Seek(pos+size+size%2, io.SeekStart); err != nil {
				return 0, err
			}
		}
		pos += size + size%2
	}
}

// ---------------------------------------------------------------- video

func (d *Dispatcher) video(ctx context.Context, lj *localJob) (map[string]any, error) {
	audio := d.localFile(lj, str(lj.payload, "audio_path", "audio_file", "audio_url"))
	secs := 0.0
	if audio != "" {
		if dur, err := mediaDuration(ctx, d, audio); err == nil && dur > 0 {
			secs = dur
		} else {
			audio = "" // unreadable narration: render the video with silence instead
		}
	}
	if secs == 0 {
		if v, ok := num(lj.payload, "duration"); ok && v > 0 {
			secs = v
		} else {
			secs = defaultSecs
		}
	}
	secs = min(max(secs, 1), maxVideoSecs)
	var images []string
	refs, _ := lj.payload["images"].([]any)
	for _, r := range refs {
		if s, ok := r.(string); ok {
			if p := d.localFile(lj, s); p != "" && len(images) < maxImages {
				images = append(images, p)
			}
		}
	}
	if len(images) == 0 {
		if p := d.localFile(lj, str(lj.payload, "image_url", "image_path", "cover_url")); p != "" {
			images = append(images, p)
		}
	}
	script := spokenText(str(lj.payload, "script", "text", "prompt", "summary", "topic", "title"), 4000)
	mark := marked(lj.owner)

	work, err := os.MkdirTemp("", "reelforge-video-")
	if err != nil {
		return nil, errcode.E("generators.video", errcode.VideoGen, "a working folder could not be made", err)
	}
	defer os.RemoveAll(work)
	caps := captions(script, secs)
	font := d.font()
	var chain []string
	for i, c := range caps {
		file := filepath.Join(work, fmt.Sprintf("caption-%02d.txt", i))
		if err := os.WriteFile(file, []byte(c.text), 0o600); err != nil {
			return nil, errcode.E("generators.video", errcode.VideoGen, "a caption could not be written", err)
		}
		chain = append(chain, fmt.Sprintf("drawtext=%stextfile=%s:fontsize=42:fontcolor=white:line_spacing=10:box=1:boxcolor=black@0.55:boxborderw=18:"+
			"x=(w-text_w)/2:y=h*0.70:enable='between(t,%.2f,%.2f)'", font, file, c.from, c.to))
	}
	if mark {
		chain = append(chain, fmt.Sprintf("drawtext=%stext=%s:fontsize=40:fontcolor=white@0.8:box=1:boxcolor=black@0.35:boxborderw=10:x=w-text_w-32:y=56", font, Mark))
	}

	abs, rel, link, err := d.assetPath(lj, "video", "mp4")
	if err != nil {
		return nil, err
	}
	dur := strconv.FormatFloat(secs, 'f', 3, 64)
	args := []string{"-y", "-hide_banner", "-loglevel", "error", "-nostdin"}
	var filter string
	if len(images) == 0 {
		args = append(args, "-f", "lavfi", "-i", fmt.Sprintf("color=c=0x1f2937:s=%dx%d:r=%d:d=%s", videoWidth, videoHeight, videoFPS, dur))
		filter = "[0:v]format=yuv420p"
	} else {
		seg := strconv.FormatFloat(secs/float64(len(images)), 'f', 3, 64)
		var parts, labels []string
		for i, img := range images {
			args = append(args, "-loop", "1", "-t", seg, "-i", img)
			parts = append(parts, fmt.Sprintf("[%d:v]scale=%d:%d:force_original_aspect_ratio=decrease,pad=%d:%d:(ow-iw)/2:(oh-ih)/2:color=0x1f2937,setsar=1,fps=%d,format=yuv420p[i%d]",
				i, videoWidth, videoHeight, videoWidth, videoHeight, videoFPS, i))
			labels = append(labels, fmt.Sprintf("[i%d]", i))
		}
		filter = strings.Join(parts, ";") + ";" + strings.Join(labels, "") + fmt.Sprintf("concat=n=%d:v=1:a=0", len(images))
	}
	audioIn := len(images)
	if len(images) == 0 {
		audioIn = 1
	}
	if audio != "" {
		args = append(args, "-i", audio)
	} else {
		args = append(args, "-f", "lavfi", "-t", dur, "-i", "anullsrc=r=44100:cl=stereo")
	}
	for _, c := range chain {
		filter += "," + c
	}
	filter += "[v]"
	args = append(args, "-filter_complex", filter, "-map", "[v]", "-map", fmt.Sprintf("%d:a", audioIn), "-t", dur)
	enc := []string{"-c:v", "libx264", "-preset", "veryfast", "-crf", "28", "-pix_fmt", "yuv420p",
		"-c:a", "aac", "-b:a", "96k", "-ar", "44100", "-movflags", "+faststart", abs}
	if err := d.runTool(ctx, "ffmpeg", append(args, enc...)...); err != nil {
		if ctx.Err() != nil || !strings.Contains(err.Error(), "libx264") {
			return nil, err
		}
		enc[1] = "mpeg4" // an ffmpeg built without x264
		enc = append(enc[:2], enc[6:]...)
		if err := d.runTool(ctx, "ffmpeg", append(args, enc...)...); err != nil {
			return nil, err
		}
	}
	narration := "silence"
	if audio != "" {
		narration = "speech"
	}
	return map[string]any{"video_url": link, "file_path": rel, "file_type": "video", "format": "mp4", "file_size": fileSize(abs),
		"duration": round(secs), "width": videoWidth, "height": videoHeight, "captions": len(caps), "images": len(images),
		"audio": narration, "watermark": mark, "tool": "ffmpeg"}, nil
}

// font is the drawtext fontfile option ("fontfile=<path>:"), or "" to let fontconfig choose. A font
// with Chinese glyphs is preferred when one is installed.
func (d *Dispatcher) font() string {
	candidates := []string{d.opts.FontFile,
		"/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
		"/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
		"/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc",
		"/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf",
		"/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf",
		"/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
		"/usr/share/fonts/TTF/DejaVuSans.ttf",
		"/System/Library/Fonts/Helvetica.ttc",
	}
	for _, f := range candidates {
		if f == "" || strings.ContainsAny(f, `:,;'[]\ `) {
			continue // not safe inside a filter graph without escaping
		}
		if st, err := os.Stat(f); err == nil && st.Mode().IsRegular() {
			return "fontfile=" + f + ":"
		}
	}
	return ""
}

type caption struct {
	text     string
	from, to float64
}

// captions splits a script into timed captions: sentences (merged when short), wrapped to lines,
// each shown for a share of the video proportional to its length.
func captions(script string, secs float64) []caption {
	var units []string
	for _, s := range sentence.Split(script, sentence.Ends+"；;") {
		if n := len(units); n > 0 && len([]rune(units[n-1]))+len([]rune(s)) < 40 {
			units[n-1] += " " + s
			continue
		}
		units = append(units, s)
	}
	for len(units) > maxCaptions { // merge neighbours until few enough
		var merged []string
		for i := 0; i < len(units); i += 2 {
			if i+1 < len(units) {
				merged = append(merged, units[i]+" "+units[i+1])
			} else {
				merged = append(merged, units[i])
			}
		}
		units = merged
	}
	total := 0
	for _, u := range units {
		total += len([]rune(u))
	}
	var out []caption
	t := 0.0
	for _, u := range units {
		share := secs * float64(len([]rune(u))) / float64(total)
		out = append(out, caption{text: wrap(u, 24, 4), from: t, to: t + share})
		t += share
	}
	return out
}

// wrap breaks s into lines of about width columns (a Han character counts two), at most maxLines
// lines (the rest is cut with an ellipsis).
func wrap(s string, width, maxLines int) string {
	var lines []string
	var line strings.Builder
	cols := 0
	flush := func() {
		if l := strings.TrimSpace(line.String()); l != "" {
			lines = append(lines, l)
		}
		line.Reset()
		cols = 0
	}
	for _, w := range splitWords(s) {
		wc := 0
		for _, r := range w {
			wc += runeCols(r)
		}
		if cols > 0 && cols+wc > width {
			flush()
		}
		line.WriteString(w)
		cols += wc
	}
	flush()
	if len(lines) > maxLines {
		lines = lines[:maxLines]
		lines[maxLines-1] += "…"
	}
	// drawtext treats '%' as the start of an expansion in text files too: double it.
	return strings.ReplaceAll(strings.Join(lines, "\n"), "%", "%%")
}

// splitWords splits at spaces (kept with the word) and between Han characters.
func splitWords(s string) []string {
	var out []string
	var cur strings.Builder
	for _, r := range s {
		switch {
		case unicode.Is(unicode.Han, r) || unicode.IsPunct(r) && r > unicode.MaxASCII:
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
			out = append(out, string(r))
		case r == ' ':
			cur.WriteRune(r)
			out = append(out, cur.String())
			cur.Reset()
		default:
			cur.WriteRune(r)
		}
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

func runeCols(r rune) int {
	if unicode.Is(unicode.Han, r) || r > 0x2E80 {
		return 2
	}
	return 1
}

func hasHan(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Han, r) {
			return true
		}
	}
	return false
}

// mediaDuration is the duration of a media file: from a WAV header, else by ffprobe.
func mediaDuration(ctx context.Context, d *Dispatcher, path string) (float64, error) {
	if dur, err := wavDuration(path); err == nil {
		return dur, nil
	}
	info, err := d.probe(ctx, path)
	if err != nil {
		return 0, err
	}
	dur, _ := info["duration"].(float64)
	return dur, nil
}

// ---------------------------------------------------------------- helpers

// runTool runs a program and turns a failure into an EXTERNAL_SERVICE_ERROR (VIDEO_GEN_ERROR for
// ffmpeg) whose internal cause carries the end of its stderr. The program dies with this process
// and is recorded in DataDir/children while it runs (internal/proc).
func (d *Dispatcher) runTool(ctx context.Context, program string, args ...string) error {
	cmd := proc.Command(ctx, program, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := d.children.Run(cmd); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		tail := strings.TrimSpace(stderr.String())
		if len(tail) > 600 {
			tail = tail[len(tail)-600:]
		}
		code := errcode.ExternalService
		if program == "ffmpeg" {
			code = errcode.VideoGen
		}
		return errcode.E("generators."+program, code, program+" failed", fmt.Errorf("%w: %s", err, tail))
	}
	return nil
}

func fileSize(path string) int64 {
	if st, err := os.Stat(path); err == nil {
		return st.Size()
	}
	return 0
}

func round(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }
