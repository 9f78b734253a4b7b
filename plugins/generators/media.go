package generators

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"unicode"

	"github.com/reelforge/reelforge/internal/netguard"
	"github.com/reelforge/reelforge/internal/render"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// Limits of the local renderer.
const (
	maxSpeechRunes = 5000
	maxScriptRunes = 4000
	maxMaterial    = 20
	maxTrackBytes  = 50 << 20
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

func (d *executor) speech(ctx context.Context, lj *localJob) (map[string]any, error) {
	text := str(lj.payload, "text", "script", "prompt", "summary", "topic", "title")
	if r := []rune(text); len(r) > maxSpeechRunes {
		text = string(r[:maxSpeechRunes])
	}
	if strings.TrimSpace(spokenText(text, maxSpeechRunes)) == "" {
		return nil, errcode.Invalid("payload.text", "speech needs a text or a script")
	}
	if voiceFor(lj.payload) == "en" && hasHan(text) {
		lj.payload["language"] = "zh"
	}
	abs, rel, link, err := d.assetPath(lj, "speech", "wav")
	if err != nil {
		return nil, err
	}
	sp := &render.Speech{Out: abs, Script: text, Voice: voiceFor(lj.payload), Tools: d.tools()}
	if s, ok := num(lj.payload, "speed"); ok && s >= 80 && s <= 400 {
		sp.Speed = int(s)
	}
	if t, ok := num(lj.payload, "duration"); ok && t > 0 {
		sp.Target = min(t, render.MaxSeconds)
	}
	spoken, err := sp.Speak(ctx)
	if err != nil && ctx.Err() == nil && sp.Voice != "en" {
		sp.Voice = "en" // an unknown voice: speak with the default rather than fail
		spoken, err = sp.Speak(ctx)
	}
	if err != nil {
		return nil, toolErr("speech", err)
	}
	out := map[string]any{"audio_url": link, "file_path": rel, "file_type": "audio", "format": "wav", "file_size": fileSize(abs),
		"duration": round(spoken.Duration), "voice": spoken.Voice, "speed": spoken.Speed, "tool": "espeak-ng",
		"characters": len([]rune(text)), "sentences": spoken.Sentences}
	// Its own key, not "note": the run's note is the script's (template or model), which the
	// workflow's assemble step takes from the last step that wrote one.
	if pace := spoken.Pace(); pace != "" {
		out["pace"] = pace
	}
	return out, nil
}

// tools runs the renderer's programs, recorded with the dispatcher's other children.
func (d *executor) tools() render.Tools { return render.Tools{Children: d.children} }

// ---------------------------------------------------------------- music

// music has no local generator: a job that names a track of the creator's (music_url, a file of
// theirs or an http(s) link) uses that track, once it is checked to hold audio; any other is
// refused before any work (checkLocal).
func (d *executor) music(ctx context.Context, lj *localJob) (map[string]any, error) {
	ref := musicRef(lj.payload)
	work, err := os.MkdirTemp("", "reelforge-music-")
	if err != nil {
		return nil, errcode.E("generators.music", errcode.MusicAPI, "a working folder could not be made", err)
	}
	defer os.RemoveAll(work)
	path, err := d.track(ctx, lj, ref, work, "music")
	if err != nil {
		e := errcode.As(err)
		if e == nil {
			return nil, err
		}
		return nil, errcode.E("generators.music", errcode.MusicAPI, e.Message(), err)
	}
	dur, _ := d.duration(ctx, path)
	return map[string]any{"music_url": ref, "duration": round(dur), "source": "the creator's track (no music generator is configured)",
		"tool": "none"}, nil
}

// musicRef is the track a payload names, "" for none.
func musicRef(payload map[string]any) string {
	return str(payload, "music_url", "music_path", "music_file")
}

// ---------------------------------------------------------------- video

// video renders a job's video (or, with output "image", its still). The timeline comes from the
// script's beats and the narration's sentence times (render.Plan); the material is the creator's
// images and clips the payload names (the host adds the project's under "media").
func (d *executor) video(ctx context.Context, lj *localJob) (map[string]any, error) {
	if strings.EqualFold(str(lj.payload, "output"), "image") {
		return d.still(ctx, lj)
	}
	work, err := os.MkdirTemp("", "reelforge-video-")
	if err != nil {
		return nil, errcode.E("generators.video", errcode.VideoGen, "a working folder could not be made", err)
	}
	defer os.RemoveAll(work)
	look, err := lookOf(lj.payload)
	if err != nil {
		return nil, err
	}
	frame, err := render.VideoFrame(str(lj.payload, "aspect_ratio"), str(lj.payload, "platform"), look.quality)
	if err != nil {
		return nil, errcode.Invalid("payload.aspect_ratio", err.Error())
	}
	p := &render.Plan{Frame: frame,
		Script: str(lj.payload, "script", "text", "prompt", "summary", "topic", "title"),
		Title:  str(lj.payload, "title", "topic", "prompt")}
	if strings.EqualFold(str(lj.payload, "captions"), "lyrics") {
		// The script is not what is heard (a music video's brief): the captions are the creator's
		// lyrics, or none; the brief's lines still cut the shots.
		if lyrics := str(lj.payload, "lyrics"); lyrics != "" {
			p.Script = lyrics
		} else {
			p.Uncaptioned = true
		}
	}
	if r := []rune(p.Script); len(r) > maxScriptRunes {
		p.Script = string(r[:maxScriptRunes])
	}
	if t, ok := num(lj.payload, "duration"); ok && t > 0 {
		p.Target = t
	}
	timing := "none"
	if ref := str(lj.payload, "audio_path", "audio_file", "audio_url"); ref != "" {
		path, err := d.track(ctx, lj, ref, work, "narration")
		if err != nil {
			return nil, err
		}
		if p.NarrationSecs, err = d.duration(ctx, path); err != nil || p.NarrationSecs <= 0 {
			return nil, errcode.E("generators.video", errcode.VideoGen, fmt.Sprintf("the narration %s has no audio ffmpeg can read", path0(ref)), err)
		}
		p.Narration = path
		p.Sentences, timing = sentencesOf(lj.payload["sentences"]), "measured"
		var flat []string
		for _, b := range render.Beats(p.Script) {
			flat = append(flat, b...)
		}
		if len(p.Sentences) != len(flat) {
			if p.Sentences = d.tools().MeasureSentences(ctx, path, flat, p.NarrationSecs); p.Sentences == nil {
				timing = "estimated"
			}
		}
	}
	music := str(lj.payload, "music_url", "music_path", "music_file")
	if music != "" {
		if p.Music, err = d.track(ctx, lj, music, work, "music"); err != nil {
			return nil, err
		}
	}
	p.Material = d.material(lj)
	// The material's probes run side by side: each is a short ffprobe run the render waits for.
	var probes sync.WaitGroup
	for i, m := range p.Material {
		probes.Add(1)
		go func() {
			defer probes.Done()
			if m.Kind == render.ShotImage {
				// A picture's size says where its focal point lies in a crop (unknown: the crop's
				// shape is assumed, as good as no size).
				if m.Focus.Set {
					p.Material[i].Size, _ = d.tools().PictureSize(ctx, m.Path)
				}
				return
			}
			// A clip's length lets its shots go on where the last left off; its sound is mixed.
			if info, err := d.probe(ctx, m.Path); err == nil {
				p.Material[i].Duration, _ = info["duration"].(float64)
				p.Material[i].Sound = info["has_audio"] == true
			}
		}()
	}
	probes.Wait()
	mark := marked(lj.owner)
	if mark {
		p.Mark = Mark
	}
	glyphs, err := render.Cover(p.Script+"\n"+p.Title+"\n"+p.Mark, d.opts.FontFile)
	if err != nil {
		return nil, errcode.E("generators.video", errcode.VideoGen, err.Error(), err)
	}
	p.Font, p.Script, p.Title = glyphs.Font, glyphs.Strip(p.Script), glyphs.Strip(p.Title)
	abs, rel, link, err := d.assetPath(lj, "video", "mp4")
	if err != nil {
		return nil, err
	}
	v := p.Video(abs)
	v.Tools, v.EmojiFont, v.Emoji = d.tools(), glyphs.EmojiFont, glyphs.Emoji
	v.Quality, v.Transition, v.ClipAudio = look.quality, look.transition, look.clipAudio
	// The cover is taken from the picture as the render makes it (render.Video.Cover).
	cover, _, coverLink, err := d.assetPath(lj, "image", "jpg")
	if err != nil {
		return nil, err
	}
	v.Cover = cover
	if err := v.Render(ctx); err != nil {
		return nil, toolErr("videogen", err)
	}
	post, err := d.postFiles(lj, v, coverLink)
	if err != nil {
		return nil, err
	}
	images, clips := 0, 0
	for _, m := range p.Material {
		if m.Kind == render.ShotClip {
			clips++
		} else {
			images++
		}
	}
	narration := "silence"
	if p.Narration != "" {
		narration = "speech"
	}
	res := map[string]any{"video_url": link, "file_path": rel, "file_type": "video", "format": "mp4", "file_size": fileSize(abs),
		"duration": round(v.Duration), "width": v.Frame.W, "height": v.Frame.H, "captions": len(v.Captions), "caption_timing": timing,
		"shots": len(v.Shots), "images": images, "clips": clips, "audio": narration, "watermark": mark, "tool": "ffmpeg",
		"font": filepath.Base(p.Font)}
	maps.Copy(res, post)
	maps.Copy(res, soundNotes(v))
	res["quality"], res["fps"], res["transition"], res["longest_shot"] = string(look.quality), look.quality.FPS(), string(look.transition), round(longestShot(v))
	textNotes(res, glyphs)
	shown := shownMaterial(v)
	res["material_shown"] = shown
	if len(p.Material) == 0 {
		res["material"] = "none: title cards"
	} else if shown < len(p.Material) {
		res["material"] = fmt.Sprintf("%d of the %d items shown: a %g s video has no room for more shots of at least %g s",
			shown, len(p.Material), round(v.Duration), render.MinShow)
	}
	if v.Tempo > 1 {
		res["narration_tempo"] = round(v.Tempo)
	}
	if music != "" {
		res["music"] = path0(music)
	}
	return res, nil
}

// postFiles makes what a post needs beside the rendered video v: its captions as WebVTT and SRT
// files, the pages the video shows on their times. It returns their result keys, with the cover's
// (a JPEG of one of its frames, not a dark one, that the render wrote: cover is its link).
func (d *executor) postFiles(lj *localJob, v *render.Video, cover string) (map[string]any, error) {
	out := map[string]any{"thumbnail_url": cover, "thumbnail_at": round(v.CoverAt)}
	shown := v.ShownCaptions()
	for _, f := range []struct {
		ext, key string
		text     func([]render.Caption) string
	}{{"vtt", "captions_vtt_url", render.WebVTT}, {"srt", "captions_srt_url", render.SRT}} {
		abs, _, link, err := d.assetPath(lj, "captions", f.ext)
		if err != nil {
			return nil, err
		}
		if err := render.WriteText(abs, f.text(shown)); err != nil {
			return nil, errcode.E("generators.video", errcode.StorageFull, "the caption file could not be written", err)
		}
		out[f.key] = link
	}
	return out, nil
}

// still renders a cover image of the payload's aspect_ratio (default the platform's) as a PNG: the
// first of the creator's images cropped to it (a card without), with the title.
func (d *executor) still(ctx context.Context, lj *localJob) (map[string]any, error) {
	frame, err := render.ImageFrame(str(lj.payload, "aspect_ratio"), str(lj.payload, "platform"))
	if err != nil {
		return nil, errcode.Invalid("payload.aspect_ratio", err.Error())
	}
	s := &render.Still{Frame: frame, Title: str(lj.payload, "title", "topic", "prompt", "summary"), Tools: d.tools()}
	for _, m := range d.material(lj) {
		if m.Kind == render.ShotImage {
			s.Image, s.Focus = m.Path, m.Focus
			break
		}
	}
	mark := marked(lj.owner)
	if mark {
		s.Mark = Mark
	}
	glyphs, err := render.Cover(s.Title+"\n"+s.Mark, d.opts.FontFile)
	if err != nil {
		return nil, errcode.E("generators.video", errcode.VideoGen, err.Error(), err)
	}
	s.Font, s.Title, s.EmojiFont, s.Emoji = glyphs.Font, glyphs.Strip(s.Title), glyphs.EmojiFont, glyphs.Emoji
	abs, rel, link, err := d.assetPath(lj, "image", "png")
	if err != nil {
		return nil, err
	}
	s.Out = abs
	if err := s.Render(ctx); err != nil {
		return nil, toolErr("videogen", err)
	}
	res := map[string]any{"image_url": link, "cover_url": link, "thumbnail_url": link, "file_path": rel, "file_type": "image", "format": "png",
		"file_size": fileSize(abs), "width": frame.W, "height": frame.H, "aspect_ratio": fmt.Sprintf("%d:%d", frame.W, frame.H),
		"watermark": mark, "tool": "ffmpeg"}
	if s.Image == "" {
		res["material"] = "none: title card"
	}
	textNotes(res, glyphs)
	return res, nil
}

// textNotes adds to a render's result how its text was drawn: its emoji in colour (and from which
// font), and the characters no installed font draws, which were left out (a note, so a creator
// knows why a character is missing rather than see a box or a failed render).
func textNotes(res map[string]any, g render.Glyphs) {
	if len(g.Emoji) > 0 {
		res["emoji"] = fmt.Sprintf("%d drawn in colour (%s)", len(g.Emoji), filepath.Base(g.EmojiFont))
	}
	if note := g.Note(); note != "" {
		res["notes"] = []string{note}
	}
}

// material is the creator's images and clips a payload names, in order, each once: "media" (the
// project's material the host adds: {path, focus} or plain references), "images", "clips", then
// image_url/cover_url/clip_url, with their focal points ({path, focus} items, or "media_focus":
// {reference: {x, y}}, which the host fills from the assets' metadata.focus). References outside
// the owner's asset folder are ignored.
func (d *executor) material(lj *localJob) []render.Material {
	var refs []string
	focus := map[string]render.Focus{}
	if byRef, ok := lj.payload["media_focus"].(map[string]any); ok { // the host's: the assets' metadata.focus
		for ref, f := range byRef {
			if m, ok := f.(map[string]any); ok {
				if fc, ok := focusOf(map[string]any{"focus": m}); ok {
					focus[ref] = fc
				}
			}
		}
	}
	for _, key := range []string{"media", "images", "clips"} {
		var list []any
		switch x := lj.payload[key].(type) {
		case []any:
			list = x
		case string: // a run input: references separated by commas or white space
			for _, f := range strings.FieldsFunc(x, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }) {
				list = append(list, f)
			}
		}
		for _, e := range list {
			switch x := e.(type) {
			case string:
				refs = append(refs, x)
			case map[string]any:
				ref := str(x, "path", "file_path", "url", "file_url")
				refs = append(refs, ref)
				if f, ok := focusOf(x); ok {
					focus[ref] = f
				}
			}
		}
	}
	for _, key := range []string{"image_url", "image_path", "cover_url", "clip_url", "video_path"} {
		if s := str(lj.payload, key); s != "" {
			refs = append(refs, s)
		}
	}
	var out []render.Material
	seen := map[string]bool{}
	for _, ref := range refs {
		p := d.localFile(lj, ref)
		if p == "" || seen[p] || len(out) >= maxMaterial {
			continue
		}
		seen[p] = true
		switch strings.ToLower(filepath.Ext(p)) {
		case ".jpg", ".jpeg", ".png", ".webp", ".bmp", ".gif":
			out = append(out, render.Material{Path: p, Kind: render.ShotImage, Focus: focus[ref]})
		case ".mp4", ".mov", ".webm", ".mkv", ".m4v", ".avi":
			out = append(out, render.Material{Path: p, Kind: render.ShotClip, Focus: focus[ref]})
		}
	}
	return out
}

// track makes an audio reference usable: a file of the owner's, or an http(s) URL fetched through
// the SSRF guard (at most maxTrackBytes) into work. A track that cannot be used fails the job
// naming it: a video is never rendered silently without the music or voice it was given.
func (d *executor) track(ctx context.Context, lj *localJob, ref, work, what string) (string, error) {
	if p := d.localFile(lj, ref); p != "" {
		return p, d.hasAudio(ctx, p, ref, what)
	}
	u, err := url.Parse(ref)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", errcode.New(errcode.VideoGen, fmt.Sprintf("the %s track %s is neither a file of yours nor an http(s) link", what, path0(ref)))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", errcode.E("generators.video", errcode.VideoGen, fmt.Sprintf("the %s track %s could not be fetched", what, path0(ref)), err)
	}
	res, err := d.tracks.Do(req)
	if err != nil {
		msg := fmt.Sprintf("the %s track %s could not be fetched", what, path0(ref))
		if errors.Is(err, netguard.ErrRefused) {
			msg += ": its address is not allowed (loopback, private or link-local; see CONTENT_FETCH_ALLOW)"
		}
		return "", errcode.E("generators.video", errcode.VideoGen, msg, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return "", errcode.New(errcode.VideoGen, fmt.Sprintf("the %s track %s could not be fetched: HTTP %d", what, path0(ref), res.StatusCode))
	}
	p := filepath.Join(work, what+"-track")
	f, err := os.Create(p)
	if err != nil {
		return "", errcode.E("generators.video", errcode.VideoGen, "the track could not be saved", err)
	}
	n, err := io.Copy(f, io.LimitReader(res.Body, maxTrackBytes+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil || n > maxTrackBytes {
		return "", errcode.E("generators.video", errcode.VideoGen, fmt.Sprintf("the %s track %s could not be fetched whole (at most %d MB)",
			what, path0(ref), maxTrackBytes>>20), err)
	}
	return p, d.hasAudio(ctx, p, ref, what)
}

// hasAudio checks that path holds sound: a WAV file whose header reads (a speech job's narration:
// no ffprobe run, which a render waits for), else an audio stream ffprobe finds.
func (d *executor) hasAudio(ctx context.Context, path, ref, what string) error {
	if dur, err := render.WAVDuration(path); err == nil && dur > 0 {
		return nil
	}
	info, err := d.probe(ctx, path)
	if err == nil && info["has_audio"] == true {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return errcode.E("generators.video", errcode.VideoGen, fmt.Sprintf("the %s track %s has no audio ffmpeg can read", what, path0(ref)), err)
}

// duration is a media file's length: from a WAV header, else by ffprobe.
func (d *executor) duration(ctx context.Context, path string) (float64, error) {
	if dur, err := render.WAVDuration(path); err == nil {
		return dur, nil
	}
	info, err := d.probe(ctx, path)
	if err != nil {
		return 0, err
	}
	dur, _ := info["duration"].(float64)
	return dur, nil
}

// sentencesOf reads the sentence times a speech job returned (passed on in the video's payload),
// with their words' times.
func sentencesOf(v any) []render.Timed {
	return timedList(v, func(m map[string]any, start, end float64) render.Timed {
		return render.Timed{Text: str(m, "text"), Start: start, End: end, Words: wordsOf(m["words"])}
	})
}

// wordsOf reads a sentence's word times (nil when absent or malformed: the planner estimates them).
func wordsOf(v any) []render.Word {
	return timedList(v, func(m map[string]any, start, end float64) render.Word {
		return render.Word{Text: str(m, "text"), Start: start, End: end}
	})
}

// timedList reads a JSON list of objects with start and end times through item; nil when any
// entry is not an object or its times are missing or run backwards.
func timedList[T any](v any, item func(m map[string]any, start, end float64) T) []T {
	list, _ := v.([]any)
	var out []T
	for _, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			return nil
		}
		start, ok1 := num(m, "start")
		end, ok2 := num(m, "end")
		if !ok1 || !ok2 || end < start {
			return nil
		}
		out = append(out, item(m, start, end))
	}
	return out
}

// path0 is a reference as an error message names it: a URL without its query, a file by its name.
func path0(ref string) string {
	if u, err := url.Parse(ref); err == nil && u.Host != "" {
		u.RawQuery, u.Fragment, u.User = "", "", nil
		return u.String()
	}
	return filepath.Base(ref)
}

// toolErr is a failed render: ffmpeg's failures are VIDEO_GEN_ERROR, espeak-ng's and others
// EXTERNAL_SERVICE_ERROR; the tool's stderr stays the internal cause.
func toolErr(jobType string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return err
	}
	code := errcode.ExternalService
	var te *render.ToolError
	if jobType == "videogen" || errors.As(err, &te) && te.Program == "ffmpeg" {
		code = errcode.VideoGen
	}
	program := "the renderer"
	if errors.As(err, &te) {
		program = te.Program
	}
	return errcode.E("generators."+jobType, code, program+" failed", err)
}

func hasHan(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Han, r) {
			return true
		}
	}
	return false
}

// ---------------------------------------------------------------- helpers

func fileSize(path string) int64 {
	if st, err := os.Stat(path); err == nil {
		return st.Size()
	}
	return 0
}

func round(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }
