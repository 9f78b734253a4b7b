package generators_test

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"image"
	_ "image/jpeg" // picture decodes covers
	_ "image/png"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/reelforge/reelforge/host/manifest"
	"github.com/reelforge/reelforge/plugins/generators"
	"github.com/reelforge/reelforge/plugins/node"
	"github.com/reelforge/reelforge/sdk/engine"
)

// renderBundle runs shipped workflows on the node engine with the local generators, for a paid
// user whose asset folder holds a red picture, a blue one and a green clip.
type renderBundle struct {
	dir, user string
	reg       *manifest.Registry
	media     string // the three files, as the run input "media" names them
}

func setupRender(t *testing.T) *renderBundle {
	t.Helper()
	needTools(t, "espeak-ng", "ffmpeg", "ffprobe")
	reg, err := manifest.Load(filepath.Join("..", "..", "manifests"))
	if err != nil {
		t.Fatal(err)
	}
	b := &renderBundle{dir: t.TempDir(), user: "u-paid", reg: reg}
	folder := filepath.Join(b.dir, "assets", b.user)
	if err := os.MkdirAll(folder, 0o750); err != nil {
		t.Fatal(err)
	}
	// Pictures of one dominant colour with a grid (so a pan shows), and a clip.
	for name, args := range map[string][]string{
		"red.png":   {"-f", "lavfi", "-i", "color=c=0xd01010:s=1200x1600,drawgrid=w=80:h=80:t=4:c=0x801010", "-frames:v", "1"},
		"blue.jpg":  {"-f", "lavfi", "-i", "color=c=0x1020d0:s=1600x1200,drawgrid=w=80:h=80:t=4:c=0x101080", "-frames:v", "1"},
		"clip.mp4":  {"-f", "lavfi", "-i", "color=c=0x10b010:s=640x360:r=25:d=3,drawgrid=w=40:h=40:t=2", "-c:v", "libx264", "-pix_fmt", "yuv420p"},
		"music.wav": {"-f", "lavfi", "-i", "sine=frequency=440:duration=4", "-ac", "2"},
	} {
		cmd := exec.Command("ffmpeg", append(append([]string{"-y", "-loglevel", "error"}, args...), filepath.Join(folder, name))...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("make %s: %v %s", name, err, out)
		}
	}
	b.media = "/api/assets/files/u-paid/red.png, /api/assets/files/u-paid/blue.jpg, assets/u-paid/clip.mp4"
	return b
}

// run runs workflow with inputs and returns the result of its job of jobType.
func (b *renderBundle) run(t *testing.T, workflow string, inputs map[string]any, jobType string) map[string]any {
	t.Helper()
	m, ok := b.reg.Get(workflow)
	if !ok {
		t.Fatalf("no %s manifest", workflow)
	}
	owner := engine.UserContext{UserID: b.user, Role: "user"}
	h := newJobHost(plugin(t, generators.Options{DataDir: b.dir}), owner)
	res, err := node.New(node.Options{}).Run(t.Context(), h, &engine.RunRequest{RunID: "run-" + workflow, Workflow: m.Workflow(),
		Attempt: 1, Inputs: inputs, User: owner})
	if err != nil || res.Status != engine.StatusCompleted {
		t.Fatalf("Run(%s) = %+v, %v; want completed", workflow, res, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, j := range h.jobs {
		if j.Type != jobType {
			continue
		}
		if j.Status != engine.JobCompleted {
			t.Fatalf("%s job: %s %+v", jobType, j.Status, j.Error)
		}
		var out map[string]any
		if err := json.Unmarshal(j.Result, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	t.Fatalf("%s made no %s job; outputs %v", workflow, jobType, res.Outputs)
	return nil
}

func (b *renderBundle) file(res map[string]any) string {
	return filepath.Join(b.dir, filepath.FromSlash(res["file_path"].(string)))
}

// cover is the PNG picture a graphic job's result names.
func (b *renderBundle) cover(t *testing.T, res map[string]any) image.Image {
	t.Helper()
	return picture(t, b.file(res), "png")
}

// picture decodes the image at path, which must be of format (png, jpeg).
func picture(t *testing.T, path, format string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, got, err := image.Decode(f)
	if err != nil || got != format {
		t.Fatalf("%s is no %s: %s, %v", filepath.Base(path), format, got, err)
	}
	return img
}

// videoInfo is what ffprobe says of a video: frame size and duration.
func videoInfo(t *testing.T, path string) (w, h int, dur float64) {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=width,height:format=duration",
		"-of", "json", path).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", path, err)
	}
	var p struct {
		Streams []struct{ Width, Height int } `json:"streams"`
		Format  struct {
			Duration string `json:"duration"`
		} `json:"format"`
	}
	if err := json.Unmarshal(out, &p); err != nil || len(p.Streams) == 0 {
		t.Fatalf("ffprobe %s: %s %v", path, out, err)
	}
	dur, _ = strconv.ParseFloat(p.Format.Duration, 64)
	return p.Streams[0].Width, p.Streams[0].Height, dur
}

var meanVolume = regexp.MustCompile(`mean_volume: (-?[0-9.]+) dB`)

// loudness is the mean volume of a file's audio in dB (-91 is digital silence).
func loudness(t *testing.T, path string) float64 {
	t.Helper()
	out, err := exec.Command("ffmpeg", "-hide_banner", "-nostdin", "-i", path, "-af", "volumedetect", "-f", "null", "-").CombinedOutput()
	m := meanVolume.FindSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("volumedetect %s: %v %s", path, err, out)
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}

// colours samples a frame a second and names each one's dominant colour in its upper third (above
// the captions): red, green, blue or other.
func colours(t *testing.T, path string) map[string]int {
	t.Helper()
	out, err := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-i", path, "-vf",
		"fps=1,crop=iw:ih/3:0:ih/12,scale=1:1:flags=area", "-f", "rawvideo", "-pix_fmt", "rgb24", "-").Output()
	if err != nil {
		t.Fatalf("sample frames of %s: %v", path, err)
	}
	got := map[string]int{}
	for i := 0; i+2 < len(out); i += 3 {
		r, g, bl := int(out[i]), int(out[i+1]), int(out[i+2])
		switch {
		case r > 2*g && r > 2*bl:
			got["red"]++
		case g > 2*r && g > 2*bl:
			got["green"]++
		case bl > 2*r && bl > 2*g:
			got["blue"]++
		default:
			got["other"]++
		}
	}
	return got
}

// TestRenderFromMaterial: voiceover_video made from two pictures and a clip of the creator's is as
// long as asked (within 10%), in the platform's frame, with a narration that is not silent, and
// shows the pictures and the clip; captions follow the narration's measured sentences.
func TestRenderFromMaterial(t *testing.T) {
	t.Parallel()
	b := setupRender(t)
	res := b.run(t, "voiceover_video", map[string]any{"topic": "morning coffee at the harbour", "duration": 20.0,
		"platform": "douyin", "media": b.media}, engine.JobVideogen)
	mp4 := b.file(res)
	w, h, dur := videoInfo(t, mp4)
	if w != 1080 || h != 1920 || dur < 18 || dur > 22 {
		t.Errorf("video %dx%d, %.2f s; want 1080x1920 and 20 s within 10%%", w, h, dur)
	}
	if v := loudness(t, mp4); v < -40 {
		t.Errorf("narration mean volume %.1f dB, want audible", v)
	}
	seen := colours(t, mp4)
	t.Logf("sampled frames: %v; result: %v", seen, res)
	if seen["red"] == 0 || seen["blue"] == 0 || seen["green"] == 0 {
		t.Errorf("sampled frames %v: want the red and the blue picture and the green clip", seen)
	}
	if res["caption_timing"] != "measured" || res["images"] != 2.0 || res["clips"] != 1.0 || res["material_shown"] != 3.0 || res["material"] != nil {
		t.Errorf("result %v: want captions on measured sentence times, two images and a clip, all three shown", res)
	}
}

// TestRenderFrames: bilibili is 16:9; without material the video is title cards; a 10 s request
// is fitted, whatever the narration's length.
func TestRenderFrames(t *testing.T) {
	t.Parallel()
	b := setupRender(t)
	res := b.run(t, "voiceover_video", map[string]any{"topic": "three tips for night photography", "duration": 10.0,
		"platform": "bilibili"}, engine.JobVideogen)
	w, h, dur := videoInfo(t, b.file(res))
	if w != 1920 || h != 1080 || dur < 9 || dur > 11 || res["material"] == nil {
		t.Errorf("video %dx%d, %.2f s, result %v; want 1920x1080 title cards of 10 s", w, h, dur, res)
	}
	// The frame the run asks for wins over the platform's.
	res = b.run(t, "voiceover_video", map[string]any{"topic": "three tips for night photography", "duration": 4.0,
		"platform": "bilibili", "aspect_ratio": "1:1"}, engine.JobVideogen)
	if w, h, _ := videoInfo(t, b.file(res)); w != 1080 || h != 1080 {
		t.Errorf("aspect_ratio 1:1: video %dx%d, want 1080x1080", w, h)
	}
}

// TestRenderGraphic: graphic's cover is a PNG of the asked 3:4, made from the creator's picture.
func TestRenderGraphic(t *testing.T) {
	t.Parallel()
	b := setupRender(t)
	res := b.run(t, "graphic", map[string]any{"topic": "咖啡的三个秘密", "media": b.media, "aspect_ratio": "3:4"}, engine.JobVideogen)
	img := b.cover(t, res)
	size := img.Bounds().Size()
	if size.X*4 != size.Y*3 || res["image_url"] == nil {
		t.Errorf("cover %dx%d (result %v), want 3:4", size.X, size.Y, res)
	}
	if r, g, bl, _ := img.At(size.X/2, size.Y/6).RGBA(); r < 2*g || r < 2*bl {
		t.Errorf("the cover's top is not the red picture (rgb %d %d %d)", r>>8, g>>8, bl>>8)
	}
}

// TestRenderUprightPhoto: a phone photo stored sideways with its EXIF orientation (6: turn 90°
// clockwise to show) comes out upright in the cover. ffmpeg turns such a picture when it decodes
// it (its autorotation, on unless -noautorotate); this guards it: the stored pixels have the red
// band on the left, the upright picture has it on top.
func TestRenderUprightPhoto(t *testing.T) {
	t.Parallel()
	b := setupRender(t)
	plain := filepath.Join(t.TempDir(), "plain.jpg")
	if out, err := exec.Command("ffmpeg", "-y", "-loglevel", "error", "-f", "lavfi", "-i",
		"color=c=0x1020d0:s=1600x1200,drawbox=x=0:y=0:w=400:h=1200:color=0xd01010:t=fill", "-frames:v", "1", plain).CombinedOutput(); err != nil {
		t.Fatalf("make the photo: %v %s", err, out)
	}
	stored, err := os.ReadFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	// An APP1 Exif segment right after SOI: a big-endian TIFF header and IFD0 with one entry,
	// Orientation (0x0112), a SHORT of value 6.
	tiff := []byte{'M', 'M', 0, 42, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, 6, 0, 0, 0, 0, 0, 0}
	app1 := append([]byte("Exif\x00\x00"), tiff...)
	seg := append([]byte{0xff, 0xe1, byte((len(app1) + 2) >> 8), byte(len(app1) + 2)}, app1...)
	photo := append(append(append([]byte{}, stored[:2]...), seg...), stored[2:]...)
	if err := os.WriteFile(filepath.Join(b.dir, "assets", b.user, "phone.jpg"), photo, 0o600); err != nil {
		t.Fatal(err)
	}
	res := b.run(t, "graphic", map[string]any{"topic": "a sideways phone photo", "media": "/api/assets/files/u-paid/phone.jpg"}, engine.JobVideogen)
	img := b.cover(t, res)
	size := img.Bounds().Size()
	if r, g, bl, _ := img.At(size.X/2, size.Y/10).RGBA(); r < 2*g || r < 2*bl {
		t.Errorf("the cover's top is not the photo's red top (rgb %d %d %d): the EXIF orientation was not applied", r>>8, g>>8, bl>>8)
	}
	if r, g, bl, _ := img.At(size.X/10, size.Y/2).RGBA(); bl < 2*r || bl < 2*g {
		t.Errorf("the cover's left middle is not blue (rgb %d %d %d)", r>>8, g>>8, bl>>8)
	}
}

// TestRenderMusicVideo: music_video_creation given a track of the creator's (no music generator is
// configured) has that music, audible, in its video.
func TestRenderMusicVideo(t *testing.T) {
	t.Parallel()
	b := setupRender(t)
	res := b.run(t, "music_video_creation", map[string]any{"prompt": "calm morning piano", "duration": 8.0,
		"music_url": "/api/assets/files/u-paid/music.wav", "media": b.media}, engine.JobVideogen)
	mp4 := b.file(res)
	if _, _, dur := videoInfo(t, mp4); dur < 7.2 || dur > 8.8 {
		t.Errorf("duration %.2f, want 8 s", dur)
	}
	if v := loudness(t, mp4); v < -30 || res["music"] == nil {
		t.Errorf("music mean volume %.1f dB (result %v), want the track audible", v, res)
	}
	// Its script is the music brief ("Mood: ...", "Length: ..."): never captioned. Lyrics are.
	if res["captions"] != 0.0 {
		t.Errorf("captions = %v, want none: the music brief is not what is heard", res["captions"])
	}
	res = b.run(t, "music_video_creation", map[string]any{"prompt": "calm morning piano", "duration": 4.0,
		"music_url": "/api/assets/files/u-paid/music.wav", "lyrics": "Morning light on the water. Coffee in my hand."}, engine.JobVideogen)
	if res["captions"] != 2.0 {
		t.Errorf("captions with lyrics = %v, want the two lines of the lyrics", res["captions"])
	}
}

// TestRenderLeavesOutUndrawableCharacters: characters no installed font draws never fail a render:
// they are left out of the captions, and the result's notes say which and what to install.
func TestRenderLeavesOutUndrawableCharacters(t *testing.T) {
	t.Parallel()
	needTools(t, "ffmpeg", "ffprobe")
	b := setupLocal(t, map[string]string{"run-a": "user"})
	res := b.run(t, &engine.Job{JobID: "v-cuneiform", RunID: "run-a", Type: engine.JobVideogen,
		Request: json.RawMessage(`{"script":"Clay tablets 𒀀𒀁𒀂 𒀃.","duration":2}`)})
	notes, _ := res["notes"].([]any)
	if res["video_url"] == nil || len(notes) != 1 || !strings.Contains(notes[0].(string), "Cuneiform") ||
		!strings.Contains(notes[0].(string), "fonts-noto") {
		t.Errorf("result = %v, want a video whose notes say the Cuneiform characters were left out and what to install", res)
	}
}

// TestRenderEmoji: a topic with emoji (and one in Chinese) renders, the emoji drawn in colour: the
// title card of a video without material shows 🔥's orange, which neither the white letters,
// their box nor the card's colours have; the graphic's cover too.
func TestRenderEmoji(t *testing.T) {
	t.Parallel()
	b := setupRender(t)
	for _, topic := range []string{"Coffee in space 🚀☕🔥", "手冲咖啡☕的三个理由🔥"} {
		res := b.run(t, "voiceover_video", map[string]any{"topic": topic, "duration": 6.0, "platform": "douyin"}, engine.JobVideogen)
		if res["emoji"] == nil || res["notes"] != nil {
			t.Errorf("%s: result %v, want emoji drawn in colour and nothing left out", topic, res)
		}
		frame := filepath.Join(t.TempDir(), "frame.png")
		if out, err := exec.Command("ffmpeg", "-y", "-loglevel", "error", "-ss", "0.5", "-i", b.file(res), "-frames:v", "1", frame).CombinedOutput(); err != nil {
			t.Fatalf("%s: frame: %v %s", topic, err, out)
		}
		// Above the captions: the highlighted word's yellow is not 🔥's.
		img := picture(t, frame, "png")
		top := img.Bounds()
		top.Max.Y = top.Min.Y + top.Dy()*62/100
		if n := orange(img.(interface {
			SubImage(image.Rectangle) image.Image
		}).SubImage(top)); n < 50 {
			t.Errorf("%s: %d orange pixels in the title card, want 🔥 drawn in colour", topic, n)
		}
	}
	res := b.run(t, "graphic", map[string]any{"topic": "Coffee in space 🚀🔥"}, engine.JobVideogen)
	if n := orange(b.cover(t, res)); n < 50 || res["emoji"] == nil {
		t.Errorf("graphic: %d orange pixels (result %v), want 🔥 drawn in colour", n, res)
	}
}

// orange counts the pixels of img that are orange or yellow (🔥's flame).
func orange(img image.Image) int {
	n := 0
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r>>8 > 200 && g>>8 > 80 && bl>>8 < 90 {
				n++
			}
		}
	}
	return n
}

// TestRenderFetchesMusicThroughTheGuard: a music link is fetched through the SSRF guard: a
// loopback address is refused (the step fails naming the track) unless CONTENT_FETCH_ALLOW names
// it, and then the music is mixed in.
func TestRenderFetchesMusicThroughTheGuard(t *testing.T) {
	t.Parallel()
	needTools(t, "ffmpeg", "ffprobe")
	wav := filepath.Join(t.TempDir(), "m.wav")
	if out, err := exec.Command("ffmpeg", "-y", "-loglevel", "error", "-f", "lavfi", "-i", "sine=frequency=330:duration=3", wav).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v %s", err, out)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, wav) }))
	defer srv.Close()
	req := json.RawMessage(`{"script":"Calm music.","duration":3,"music_url":"` + srv.URL + `/m.wav?token=secret"}`)

	refused := setupLocal(t, map[string]string{"run-a": "user"})
	job := &engine.Job{JobID: "v-refused", RunID: "run-a", Type: engine.JobVideogen, Request: req}
	if f := refused.failure(t, job); f == nil || f.Code != "VIDEO_GEN_ERROR" || !strings.Contains(f.Message, "/m.wav") ||
		!strings.Contains(f.Message, "not allowed") || strings.Contains(f.Message, "secret") {
		t.Errorf("failure = %+v, want VIDEO_GEN_ERROR naming the track (not its query) as not allowed", f)
	}

	allowed := setupLocal(t, map[string]string{"run-a": "user"}, "127.0.0.1")
	res := allowed.run(t, &engine.Job{JobID: "v-allowed", RunID: "run-a", Type: engine.JobVideogen, Request: req})
	mp4 := filepath.Join(allowed.dir, filepath.FromSlash(res["file_path"].(string)))
	if v := loudness(t, mp4); v < -30 || res["music"] == nil {
		t.Errorf("music mean volume %.1f dB (result %v), want the fetched track audible", v, res)
	}
}

// cues reads a caption file with ffprobe (which knows WebVTT and SRT): each cue's start, end and
// text.
func cues(t *testing.T, path string) (format string, out []struct {
	From, To float64
	Text     string
}) {
	t.Helper()
	b, err := exec.Command("ffprobe", "-v", "error", "-show_entries", "format=format_name:packet=pts_time,duration_time,data",
		"-show_data", "-of", "json", path).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", path, err)
	}
	var p struct {
		Format struct {
			FormatName string `json:"format_name"`
		} `json:"format"`
		Packets []struct {
			PTS  string `json:"pts_time"`
			Dur  string `json:"duration_time"`
			Data string `json:"data"`
		} `json:"packets"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatalf("ffprobe %s: %s %v", path, b, err)
	}
	// -show_data is a hex dump, "00000000: 4669 7368 ...  Fish...": the bytes are in columns 10-49.
	for _, pk := range p.Packets {
		var raw []byte
		for _, l := range strings.Split(pk.Data, "\n") {
			if len(l) > 10 {
				h, _ := hex.DecodeString(strings.ReplaceAll(l[10:min(len(l), 49)], " ", ""))
				raw = append(raw, h...)
			}
		}
		from, _ := strconv.ParseFloat(pk.PTS, 64)
		d, _ := strconv.ParseFloat(pk.Dur, 64)
		out = append(out, struct {
			From, To float64
			Text     string
		}{from, from + d, html.UnescapeString(string(raw))})
	}
	return p.Format.FormatName, out
}

// fileOf is the file under dir a file URL of the host names.
func fileOf(dir, link string) string {
	return filepath.Join(dir, "assets", filepath.FromSlash(strings.TrimPrefix(link, "/api/assets/files/")))
}

// TestRenderPostFiles: a voiceover video comes with a cover of its frame and caption files in
// WebVTT and SRT whose cues say the narration's sentences (the words the video shows) on the
// narration's measured times; the run's outputs list them with the video's duration and size.
func TestRenderPostFiles(t *testing.T) {
	t.Parallel()
	b := setupRender(t)
	script := "[Hook] Coffee tastes better at the harbour. [Beat] Grind the beans fresh every morning. [CTA] Follow for more tips."
	inputs := map[string]any{"script": script, "duration": 12.0, "platform": "xiaohongshu"}
	res := b.run(t, "voiceover_video", inputs, engine.JobVideogen)
	speech := b.run(t, "voiceover_video", inputs, engine.JobSpeech)

	w, h, dur := videoInfo(t, b.file(res))
	if res["width"] != float64(w) || res["height"] != float64(h) || math.Abs(res["duration"].(float64)-dur) > 0.2 {
		t.Errorf("result %vx%v %v s; ffprobe says %dx%d %.2f s", res["width"], res["height"], res["duration"], w, h, dur)
	}
	cover := picture(t, fileOf(b.dir, res["thumbnail_url"].(string)), "jpeg")
	if got := cover.Bounds().Size(); got.X != w || got.Y != h {
		t.Errorf("cover %dx%d, want the video's %dx%d", got.X, got.Y, w, h)
	}
	if r, g, bl, _ := cover.At(w/2, h/6).RGBA(); r>>8 < 10 && g>>8 < 10 && bl>>8 < 10 {
		t.Errorf("the cover's top is black (rgb %d %d %d), want the title card", r>>8, g>>8, bl>>8)
	}

	var said []string
	for _, s := range speech["sentences"].([]any) {
		said = append(said, s.(map[string]any)["text"].(string))
	}
	first := speech["sentences"].([]any)[0].(map[string]any)
	for key, format := range map[string]string{"captions_vtt_url": "webvtt", "captions_srt_url": "srt"} {
		link, _ := res[key].(string)
		gotFormat, cs := cues(t, fileOf(b.dir, link))
		if gotFormat != format || len(cs) < len(said) {
			t.Fatalf("%s: %s with %d cues, want %s with a cue a sentence at least (%d)", key, gotFormat, len(cs), format, len(said))
		}
		var text []string
		words := 0
		for i, c := range cs {
			// A WebVTT cue times its words with timestamp tags (<00:00:01.200>), within the cue.
			for _, m := range cueTag.FindAllStringSubmatch(c.Text, -1) {
				if at := cueSeconds(m[1]); at <= c.From || at >= c.To {
					t.Errorf("%s cue %d %.3f-%.3f: a word at %.3f s, outside it", key, i, c.From, c.To, at)
				}
				words++
			}
			text = append(text, cueTag.ReplaceAllString(c.Text, ""))
			if c.To <= c.From || c.To > dur+0.05 || i > 0 && c.From < cs[i-1].To-0.01 {
				t.Errorf("%s cue %d %.3f-%.3f: want increasing times within the video's %.2f s", key, i, c.From, c.To, dur)
			}
		}
		if format == "webvtt" && words < len(strings.Fields(script))/2 || format == "srt" && words > 0 {
			t.Errorf("%s: %d word timestamps, want most words timed in WebVTT and none in SRT", key, words)
		}
		if squeeze(strings.Join(text, " ")) != squeeze(strings.Join(said, " ")) {
			t.Errorf("%s says %q, want the sentences %q", key, text, said)
		}
		if math.Abs(cs[0].From-first["start"].(float64)) > 0.05 {
			t.Errorf("%s: first cue at %.3f s, want the first sentence's measured start %v", key, cs[0].From, first["start"])
		}
	}
}

// cueTag is a WebVTT cue timestamp, the time of the word after it.
var cueTag = regexp.MustCompile(`<(\d\d:\d\d:\d\d\.\d\d\d)>`)

// cueSeconds reads HH:MM:SS.mmm.
func cueSeconds(s string) float64 {
	var h, m int
	var sec float64
	fmt.Sscanf(s, "%d:%d:%f", &h, &m, &sec)
	return float64(h*3600+m*60) + sec
}

func squeeze(s string) string { return strings.Join(strings.Fields(s), "") }

// TestRenderCoverSkipsDarkFrames: a video whose only clip is black for its first six seconds gets
// a cover from a later, lit frame, not the dark first shot's.
func TestRenderCoverSkipsDarkFrames(t *testing.T) {
	t.Parallel()
	needTools(t, "ffmpeg", "ffprobe")
	b := setupLocal(t, map[string]string{"run-a": "user"})
	userClip(t, b, "dusk.mp4", "color=c=0x10b010:s=640x360:r=25:d=12,fade=t=in:st=6:d=0.2")
	res := b.run(t, &engine.Job{JobID: "v-dusk", RunID: "run-a", Type: engine.JobVideogen,
		Request: json.RawMessage(`{"script":"Night falls over the harbour.","duration":10,"media":["assets/user-run-a/dusk.mp4"]}`)})
	cover := picture(t, fileOf(b.dir, res["thumbnail_url"].(string)), "jpeg")
	size := cover.Bounds().Size()
	if r, g, bl, _ := cover.At(size.X/2, size.Y/6).RGBA(); g>>8 < 100 || g < 2*r || g < 2*bl {
		t.Errorf("the cover's top is rgb %d %d %d (taken at %v s), want the lit green clip", r>>8, g>>8, bl>>8, res["thumbnail_at"])
	}
	if at, _ := res["thumbnail_at"].(float64); at < 6 {
		t.Errorf("cover taken at %v s, want after the clip's dark first 6 s", res["thumbnail_at"])
	}
}

// TestRenderCoverIsTheVideosFrame: the cover is the video's own frame at thumbnail_at, not its
// neighbour. The clip's brightness steps every frame, so a frame off shows in the mean luma.
func TestRenderCoverIsTheVideosFrame(t *testing.T) {
	t.Parallel()
	needTools(t, "ffmpeg", "ffprobe")
	b := setupLocal(t, map[string]string{"run-a": "user"})
	// Luma 40 + 3 per frame at 30 fps: neighbouring frames differ by 3 levels.
	userClip(t, b, "ramp.mp4", "color=c=gray:s=640x360:r=30:d=8,format=yuv420p,geq=lum='40+3*N':cb=128:cr=128")
	res := b.run(t, &engine.Job{JobID: "v-ramp", RunID: "run-a", Type: engine.JobVideogen,
		Request: json.RawMessage(`{"script":"A room grows brighter.","duration":6,"transition":"cut","media":["assets/user-run-a/ramp.mp4"]}`)})
	at, _ := res["thumbnail_at"].(float64)
	video := filepath.Join(b.dir, filepath.FromSlash(res["file_path"].(string)))
	coverLuma := sampledTop(picture(t, fileOf(b.dir, res["thumbnail_url"].(string)), "jpeg"))
	frameLuma := func(sec float64) float64 {
		png := filepath.Join(t.TempDir(), "frame.png")
		if out, err := exec.Command("ffmpeg", "-y", "-loglevel", "error", "-i", video, "-ss", strconv.FormatFloat(sec, 'f', 4, 64),
			"-frames:v", "1", png).CombinedOutput(); err != nil {
			t.Fatalf("frame at %v: %v %s", sec, err, out)
		}
		return sampledTop(picture(t, png, "png"))
	}
	// A time a little before a frame's own picks that frame (the first at or after it).
	own, before, after := frameLuma(at-0.4/30), frameLuma(at-1.4/30), frameLuma(at+0.6/30)
	if math.Abs(coverLuma-own) > 1.2 || math.Abs(coverLuma-before) < 1.5 || math.Abs(coverLuma-after) < 1.5 {
		t.Errorf("cover at %v s has luma %.1f; the video's frame there %.1f, the one before %.1f, after %.1f", at, coverLuma, own, before, after)
	}
}

// sampledTop is the mean luma of the top fifth of img, above any caption.
func sampledTop(img image.Image) float64 {
	r := img.Bounds()
	var sum float64
	n := 0
	for y := r.Min.Y + 8; y < r.Min.Y+r.Dy()/5; y += 4 {
		for x := r.Min.X + 8; x < r.Max.X-8; x += 4 {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			sum += (0.299*float64(cr) + 0.587*float64(cg) + 0.114*float64(cb)) / 257
			n++
		}
	}
	return sum / float64(max(n, 1))
}

// userClip makes a clip from an ffmpeg lavfi source in run-a's folder of the user's assets, encoded
// without loss (a test reads its frames' levels).
func userClip(t *testing.T, b *localBundle, name, source string) {
	t.Helper()
	folder := filepath.Join(b.dir, "assets", "user-run-a")
	if err := os.MkdirAll(folder, 0o750); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("ffmpeg", "-y", "-loglevel", "error", "-f", "lavfi", "-i", source, "-c:v", "libx264", "-qp", "0",
		"-pix_fmt", "yuv420p", filepath.Join(folder, name)).CombinedOutput(); err != nil {
		t.Fatalf("make the clip %s: %v %s", name, err, out)
	}
}

// TestRenderJobLook: what a videogen job asks of the file's look and sound reaches the file. A
// draft is 720x1280 at 25 fps; a standard 1:1 video 1080x1080 at 30 fps with its sound at -14 LUFS
// (ebur128 on the file); clip_audio mute leaves the clip's tone out (the video silent) and keep
// keeps it; a picture's focal point in media_focus (where the host passes an asset's
// metadata.focus) holds the crop: a red band at the picture's left edge is in the 9:16 frame,
// which a centred crop of the landscape picture leaves out.
func TestRenderJobLook(t *testing.T) {
	t.Parallel()
	needTools(t, "ffmpeg", "ffprobe")
	b := setupLocal(t, map[string]string{"run-a": "user"})
	folder := filepath.Join(b.dir, "assets", "user-run-a")
	if err := os.MkdirAll(folder, 0o750); err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][]string{
		"wide.png": {"-f", "lavfi", "-i", "color=c=0x1020d0:s=1600x1200,drawbox=x=0:y=0:w=400:h=1200:color=0xd01010:t=fill", "-frames:v", "1"},
		"tone.mp4": {"-f", "lavfi", "-i", "color=c=0x10b010:s=640x360:r=25:d=6", "-f", "lavfi", "-i", "sine=frequency=440:duration=6",
			"-filter:a", "volume=0.3", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest"},
	} {
		if out, err := exec.Command("ffmpeg", append(append([]string{"-y", "-loglevel", "error"}, args...), filepath.Join(folder, name))...).CombinedOutput(); err != nil {
			t.Fatalf("make %s: %v %s", name, err, out)
		}
	}
	stream := func(path string) (w, h int, rate string) {
		t.Helper()
		out, err := exec.Command("ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=width,height,r_frame_rate",
			"-of", "json", path).Output()
		var p struct {
			Streams []struct {
				Width, Height int
				Rate          string `json:"r_frame_rate"`
			} `json:"streams"`
		}
		if err != nil || json.Unmarshal(out, &p) != nil || len(p.Streams) == 0 {
			t.Fatalf("ffprobe %s: %v %s", path, err, out)
		}
		return p.Streams[0].Width, p.Streams[0].Height, p.Streams[0].Rate
	}

	draft := b.run(t, &engine.Job{JobID: "v-draft", RunID: "run-a", Type: engine.JobVideogen, Request: json.RawMessage(`{"script":"A red wall by the harbour.",
		"duration":8,"quality":"draft","transition":"cut","clip_audio":"mute",
		"media":["assets/user-run-a/wide.png","assets/user-run-a/tone.mp4"],"media_focus":{"assets/user-run-a/wide.png":{"x":0.05,"y":0.5}}}`)})
	mp4 := filepath.Join(b.dir, filepath.FromSlash(draft["file_path"].(string)))
	if w, h, rate := stream(mp4); w != 720 || h != 1280 || rate != "25/1" {
		t.Errorf("draft: %dx%d at %s, want 720x1280 at 25/1", w, h, rate)
	}
	if draft["quality"] != "draft" || draft["fps"] != 25.0 || draft["transition"] != "cut" || draft["clip_audio"] != "muted" ||
		draft["longest_shot"].(float64) > 4 {
		t.Errorf("draft result %v, want quality draft at 25 fps, cut, the clip muted, no shot over 4 s", draft)
	}
	if v := loudness(t, mp4); v > -80 {
		t.Errorf("draft with the clip muted: mean volume %.1f dB, want silence", v)
	}
	frame := filepath.Join(t.TempDir(), "frame.png")
	if out, err := exec.Command("ffmpeg", "-y", "-loglevel", "error", "-ss", "0.5", "-i", mp4, "-frames:v", "1", frame).CombinedOutput(); err != nil {
		t.Fatalf("frame: %v %s", err, out)
	}
	if r, g, bl, _ := picture(t, frame, "png").At(720/5, 1280/3).RGBA(); r < 2*g || r < 2*bl {
		t.Errorf("the picture's shot at (%d, %d) is rgb %d %d %d, want the red band its focal point keeps in the crop", 720/5, 1280/3, r>>8, g>>8, bl>>8)
	}

	standard := b.run(t, &engine.Job{JobID: "v-standard", RunID: "run-a", Type: engine.JobVideogen, Request: json.RawMessage(`{"script":"A green field.",
		"duration":3,"aspect_ratio":"1:1","clip_audio":"keep","media":["assets/user-run-a/tone.mp4"]}`)})
	mp4 = filepath.Join(b.dir, filepath.FromSlash(standard["file_path"].(string)))
	if w, h, rate := stream(mp4); w != 1080 || h != 1080 || rate != "30/1" {
		t.Errorf("standard: %dx%d at %s, want 1080x1080 at 30/1", w, h, rate)
	}
	if standard["quality"] != "standard" || standard["fps"] != 30.0 || standard["transition"] != "fade" || standard["clip_audio"] != "kept" {
		t.Errorf("standard result %v, want quality standard at 30 fps, the default fade, the clip's sound kept", standard)
	}
	out, err := exec.Command("ffmpeg", "-hide_banner", "-nostdin", "-i", mp4, "-map", "0:a", "-af", "ebur128=peak=true", "-f", "null", "-").CombinedOutput()
	m := integratedLUFS.FindAllSubmatch(out, -1)
	if err != nil || m == nil {
		t.Fatalf("ebur128: %v %s", err, out)
	}
	if lufs, _ := strconv.ParseFloat(string(m[len(m)-1][1]), 64); math.Abs(lufs+14) > 0.5 {
		t.Errorf("standard with the clip's tone kept: %.1f LUFS integrated, want -14±0.5 (result %v)", lufs, standard["loudness"])
	}
}

// integratedLUFS is ebur128's summary of integrated loudness.
var integratedLUFS = regexp.MustCompile(`I:\s+(-?[0-9.]+) LUFS`)
