package generators_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reelforge/reelforge/internal/testtool"
	"github.com/reelforge/reelforge/plugins/generators"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// fakeGenerator records submissions and answers with status.
type fakeGenerator struct {
	status int
	mu     sync.Mutex
	got    []map[string]any
	paths  []string
}

func (f *fakeGenerator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	f.mu.Lock()
	f.got, f.paths = append(f.got, body), append(f.paths, r.URL.Path)
	f.mu.Unlock()
	w.WriteHeader(f.status)
}

func startGenerator(t *testing.T, status int) (*fakeGenerator, string) {
	t.Helper()
	f := &fakeGenerator{status: status}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func downURL(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	return srv.URL
}

// TestJobToExternalGenerator: a job whose type has an external generator is posted to it, and the
// plugin answers waiting (the generator calls back).
func TestJobToExternalGenerator(t *testing.T) {
	t.Parallel()
	gen, url := startGenerator(t, http.StatusAccepted)
	eng := plugin(t, generators.Options{MusicURL: url + "/music", SpeechURL: url + "/speech"})
	tests := map[string]struct {
		job         *engine.Job
		callbackURL string
		wantPath    string
		want        map[string]any
	}{
		"bare payload, callback base": {
			job:         &engine.Job{JobID: "j-1", Type: engine.JobMusic, Request: json.RawMessage(`{"prompt":"rain","duration":30}`)},
			callbackURL: "http://host.test",
			wantPath:    "/music",
			want: map[string]any{"job_id": "j-1", "type": "music", "payload": map[string]any{"prompt": "rain", "duration": float64(30)},
				"callback_url": "http://host.test/api/webhooks/ai-callback"},
		},
		"wrapped payload, full callback": {
			job:         &engine.Job{JobID: "j-2", Type: engine.JobSpeech, Request: json.RawMessage(`{"url":"x","method":"POST","payload":{"text":"hi"}}`)},
			callbackURL: "http://host.test/api/webhooks/ai-callback",
			wantPath:    "/speech",
			want: map[string]any{"job_id": "j-2", "type": "speech", "payload": map[string]any{"text": "hi"},
				"callback_url": "http://host.test/api/webhooks/ai-callback"},
		},
	}
	for name, tt := range tests {
		if res := doJob(t, eng, tt.job, engine.UserContext{}, tt.callbackURL); res.Status != engine.StatusWaiting {
			t.Fatalf("%s: the job's Run = %+v, want waiting", name, res)
		}
		gen.mu.Lock()
		got, path := gen.got[len(gen.got)-1], gen.paths[len(gen.paths)-1]
		gen.mu.Unlock()
		if diff := cmp.Diff(tt.want, got); diff != "" || path != tt.wantPath {
			t.Errorf("%s: POST %s, body mismatch (-want +got):\n%s", name, path, diff)
		}
	}
}

// TestJobFailures: a job that cannot be done fails with its type's code and says why.
func TestJobFailures(t *testing.T) {
	t.Parallel()
	_, url500 := startGenerator(t, http.StatusInternalServerError)
	down := downURL(t)
	tests := map[string]struct {
		opts    generators.Options
		job     *engine.Job
		want    errcode.Code
		wantMsg string
	}{
		"music answers 500":    {opts: generators.Options{MusicURL: url500}, job: &engine.Job{JobID: "j", Type: engine.JobMusic}, want: errcode.MusicAPI},
		"videogen answers 500": {opts: generators.Options{VideogenURL: url500}, job: &engine.Job{JobID: "j", Type: engine.JobVideogen}, want: errcode.VideoGen},
		"speech down":          {opts: generators.Options{SpeechURL: down}, job: &engine.Job{JobID: "j", Type: engine.JobSpeech}, want: errcode.ExternalService},
		"videoparse down":      {opts: generators.Options{VideoparseURL: down}, job: &engine.Job{JobID: "j", Type: engine.JobVideoparse}, want: errcode.ExternalService},
		"music without a url":  {job: &engine.Job{JobID: "j", Type: engine.JobMusic}, want: errcode.ExternalService, wantMsg: "MUSIC_API_URL"},
		"espeak-ng missing": {opts: generators.Options{LookPath: missing},
			job: &engine.Job{JobID: "j", Type: engine.JobSpeech}, want: errcode.ExternalService, wantMsg: "install espeak-ng"},
		"ffmpeg missing": {opts: generators.Options{LookPath: missing},
			job: &engine.Job{JobID: "j", Type: engine.JobVideogen}, want: errcode.ExternalService, wantMsg: "install ffmpeg"},
		"unknown type":   {job: &engine.Job{JobID: "j", Type: "graph"}, want: errcode.Validation},
		"request no obj": {job: &engine.Job{JobID: "j", Type: engine.JobSpeech, Request: json.RawMessage(`[1]`)}, want: errcode.Validation},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res := doJob(t, plugin(t, tt.opts), tt.job, engine.UserContext{}, "http://host.test")
			if res.Status != engine.StatusFailed || res.Error == nil || res.Error.Code != string(tt.want) {
				t.Fatalf("the job's Run = %+v (%+v), want failed with %s", res, res.Error, tt.want)
			}
			if !strings.Contains(res.Error.Message, tt.wantMsg) {
				t.Errorf("failure message = %q, want it to contain %q", res.Error.Message, tt.wantMsg)
			}
		})
	}
}

func missing(string) (string, error) { return "", exec.ErrNotFound }

func needTools(t *testing.T, tools ...string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts external tools: skipped under -short")
	}
	testtool.Need(t, tools...)
}

type localBundle struct {
	dir   string
	eng   engine.Engine
	roles map[string]string // run id -> its owner's role; other runs have no known owner
}

// setupLocal is the generators plugin doing local work for runs of the given roles; fetchAllow is
// its FetchAllow (the test pages are on 127.0.0.1, which the SSRF guard refuses otherwise).
func setupLocal(t *testing.T, roles map[string]string, fetchAllow ...string) *localBundle {
	t.Helper()
	b := &localBundle{dir: t.TempDir(), roles: roles}
	b.eng = plugin(t, generators.Options{DataDir: b.dir, FetchAllow: fetchAllow})
	return b
}

// do hands job to the plugin for its run's owner, as the host does, and returns the answer.
func (b *localBundle) do(t *testing.T, job *engine.Job) *engine.RunResult {
	t.Helper()
	owner := engine.UserContext{}
	if role, ok := b.roles[job.RunID]; ok {
		owner = engine.UserContext{UserID: "user-" + job.RunID, Role: role}
	}
	return doJob(t, b.eng, job, owner, "http://host.test")
}

// run does job and returns its result, failing the test when the job failed.
func (b *localBundle) run(t *testing.T, job *engine.Job) map[string]any {
	t.Helper()
	res := b.do(t, job)
	if res.Status != engine.StatusCompleted {
		t.Fatalf("job %s = %s %+v, want completed", job.JobID, res.Status, res.Error)
	}
	return res.Outputs
}

// failure does job and returns its failure (nil when it completed).
func (b *localBundle) failure(t *testing.T, job *engine.Job) *engine.RunError {
	t.Helper()
	res := b.do(t, job)
	if res.Status == engine.StatusCompleted {
		return nil
	}
	return res.Error
}

// probe answers ffprobe's streams and duration of a file.
func probe(t *testing.T, path string) (streams []string, duration float64) {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-print_format", "json", "-show_format", "-show_streams", path).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", path, err)
	}
	var p struct {
		Format struct {
			Duration string `json:"duration"`
		} `json:"format"`
		Streams []struct {
			CodecType string `json:"codec_type"`
		} `json:"streams"`
	}
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatal(err)
	}
	for _, s := range p.Streams {
		streams = append(streams, s.CodecType)
	}
	duration, _ = strconv.ParseFloat(p.Format.Duration, 64)
	return streams, duration
}

// markRegionVaries reports whether the top-right corner of the frame at 1 s (measured from the
// right edge, so at any frame width) has more than one
// shade: the mark's text, over a plain background.
func markRegionVaries(t *testing.T, path string) bool {
	t.Helper()
	out, err := exec.Command("ffmpeg", "-v", "error", "-ss", "1", "-i", path, "-frames:v", "1",
		"-vf", "crop=320:110:iw-352:40,format=gray", "-f", "rawvideo", "-").Output()
	if err != nil || len(out) == 0 {
		t.Fatalf("frame of %s: %v", path, err)
	}
	lo, hi := out[0], out[0]
	for _, p := range out {
		lo, hi = min(lo, p), max(hi, p)
	}
	return hi-lo > 60
}

func TestLocalSpeechAndVideo(t *testing.T) {
	t.Parallel()
	needTools(t, "espeak-ng", "ffmpeg", "ffprobe")
	b := setupLocal(t, map[string]string{"run-free": "free_user", "run-paid": "user"})

	speech := b.run(t, &engine.Job{JobID: "speech-1", RunID: "run-free", Type: engine.JobSpeech,
		Request: json.RawMessage(`{"script":"[Hook]\nMorning coffee, made simple.\n[Call to action]\nFollow for more."}`)})
	wav := filepath.Join(b.dir, filepath.FromSlash(speech["file_path"].(string)))
	if speech["audio_url"] != "/api/assets/files/user-run-free/speech/speech-1.wav" || !strings.HasPrefix(speech["file_path"].(string), "assets/user-run-free/speech/") {
		t.Errorf("speech result = %v", speech)
	}
	if d, _ := speech["duration"].(float64); d < 0.5 || d > 20 {
		t.Errorf("speech duration = %v, want a few seconds", speech["duration"])
	}
	if streams, _ := probe(t, wav); !cmp.Equal(streams, []string{"audio"}) {
		t.Errorf("speech file streams = %v, want one audio stream", streams)
	}
	if speech["pace"] != nil {
		t.Errorf("speech without a duration has pace %q, want none", speech["pace"])
	}
	// The same narration squeezed into 1 s is spoken as fast as espeak-ng goes, and says so.
	rushed := b.run(t, &engine.Job{JobID: "speech-2", RunID: "run-free", Type: engine.JobSpeech,
		Request: json.RawMessage(`{"script":"[Hook]\nMorning coffee, made simple.\n[Call to action]\nFollow for more.","duration":1}`)})
	if pace, _ := rushed["pace"].(string); !strings.Contains(pace, fmt.Sprintf("spoken at %v words a minute", rushed["speed"])) {
		t.Errorf("speech fitted to 1 s: speed %v, pace %q; want the pace named", rushed["speed"], pace)
	}

	// The free user's video over the narration: its length follows the speech, with the mark.
	video := b.run(t, &engine.Job{JobID: "video-1", RunID: "run-free", Type: engine.JobVideogen,
		Request: json.RawMessage(`{"script":"Morning coffee, made simple. Follow for more.","audio_url":"` + speech["audio_url"].(string) + `"}`)})
	mp4 := filepath.Join(b.dir, filepath.FromSlash(video["file_path"].(string)))
	streams, dur := probe(t, mp4)
	if !cmp.Equal(streams, []string{"video", "audio"}) || video["audio"] != "speech" || video["watermark"] != true {
		t.Errorf("video streams = %v, result = %v; want video and audio from the speech, marked", streams, video)
	}
	if want := speech["duration"].(float64); dur < want-0.3 || dur > want+0.3 {
		t.Errorf("video duration = %.2f, want about the speech's %.2f", dur, want)
	}
	if !markRegionVaries(t, mp4) {
		t.Errorf("the free user's video shows no mark in its top-right corner")
	}
}

func TestLocalVideoMarkByRole(t *testing.T) {
	t.Parallel()
	needTools(t, "ffmpeg", "ffprobe")
	b := setupLocal(t, map[string]string{"run-free": "free_user", "run-paid": "user"})
	tests := map[string]struct {
		runID    string
		wantMark bool
	}{
		"free user":     {runID: "run-free", wantMark: true},
		"paid user":     {runID: "run-paid", wantMark: false},
		"unknown owner": {runID: "run-gone", wantMark: true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res := b.run(t, &engine.Job{JobID: "v-" + tt.runID, RunID: tt.runID, Type: engine.JobVideogen,
				Request: json.RawMessage(`{"script":"Two seconds of colour. 两秒钟。","duration":2}`)})
			mp4 := filepath.Join(b.dir, filepath.FromSlash(res["file_path"].(string)))
			streams, dur := probe(t, mp4)
			if !cmp.Equal(streams, []string{"video", "audio"}) || dur < 1.9 || dur > 2.2 {
				t.Errorf("streams = %v, duration = %.2f; want a video and an audio stream, 2 s", streams, dur)
			}
			if res["watermark"] != tt.wantMark || markRegionVaries(t, mp4) != tt.wantMark {
				t.Errorf("watermark = %v (result %v), want %v", markRegionVaries(t, mp4), res["watermark"], tt.wantMark)
			}
		})
	}
}

func TestLocalVideoRefusesOtherUsersFiles(t *testing.T) {
	t.Parallel()
	needTools(t, "ffmpeg", "ffprobe")
	b := setupLocal(t, map[string]string{"run-a": "user"})
	other := filepath.Join(b.dir, "assets", "someone-else", "speech", "x.wav")
	if err := os.MkdirAll(filepath.Dir(other), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, []byte("RIFF"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The job fails naming the track (never a video silently without the audio it was given), and
	// never reads the other user's file.
	job := &engine.Job{JobID: "v-other", RunID: "run-a", Type: engine.JobVideogen,
		Request: json.RawMessage(`{"duration":1,"audio_url":"/api/assets/files/someone-else/speech/x.wav"}`)}
	if f := b.failure(t, job); f == nil || f.Code != string(errcode.VideoGen) || !strings.Contains(f.Message, "x.wav") ||
		strings.Contains(f.Message, "someone-else") {
		t.Errorf("failure = %+v, want VIDEO_GEN_ERROR naming the track but not its owner's folder", f)
	}
}

func TestLocalVideoparse(t *testing.T) {
	t.Parallel()
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, `<html><head><title>Fallback title</title>
		<meta property="og:title" content="Latte art &amp; more">
		<meta content="Five patterns in one minute" property='og:description'>
		<meta property="og:image" content="/cover.png"></head><body></body></html>`)
	}))
	t.Cleanup(page.Close)
	b := setupLocal(t, map[string]string{"run-1": "user"}, "127.0.0.1")
	res := b.run(t, &engine.Job{JobID: "p-1", RunID: "run-1", Type: engine.JobVideoparse, Request: json.RawMessage(`{"url":"` + page.URL + `/v/1"}`)})
	want := map[string]any{"url": page.URL + "/v/1", "platform": "web", "source": "page_metadata", "title": "Latte art & more",
		"description": "Five patterns in one minute", "cover_url": page.URL + "/cover.png", "engine": "local"}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("videoparse result mismatch (-want +got):\n%s", diff)
	}

	if f := b.failure(t, &engine.Job{JobID: "p-2", RunID: "run-1", Type: engine.JobVideoparse,
		Request: json.RawMessage(`{"url":"` + downURL(t) + `"}`)}); f == nil || f.Code != string(errcode.ExternalService) {
		t.Errorf("videoparse of a page that is down: failure = %+v, want EXTERNAL_SERVICE_ERROR", f)
	}
}

func TestLocalVideoparseRefusesPrivateAddresses(t *testing.T) {
	t.Parallel()
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `<html><head><title>internal</title></head></html>`)
	}))
	t.Cleanup(page.Close)
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	}))
	t.Cleanup(redirect.Close)
	// The redirector is reached through the allowed name localhost; where it points is not allowed.
	viaName := strings.Replace(redirect.URL, "127.0.0.1", "localhost", 1)
	b := setupLocal(t, map[string]string{"run-1": "user"}, "localhost")
	links := map[string]string{
		"loopback":             page.URL + "/v/1",
		"metadata service":     "http://169.254.169.254/latest/meta-data/",
		"private":              "http://10.0.0.1/",
		"redirect to loopback": viaName + "/?to=" + page.URL,
		"redirect to private":  viaName + "/?to=http://192.168.0.1/",
		"redirect to metadata": viaName + "/?to=http://169.254.169.254/",
	}
	i := 0
	for name, link := range links {
		i++
		id := fmt.Sprintf("p-%d", i)
		if f := b.failure(t, &engine.Job{JobID: id, RunID: "run-1", Type: engine.JobVideoparse,
			Request: json.RawMessage(`{"url":"` + link + `"}`)}); f == nil || f.Code != string(errcode.Validation) || !strings.Contains(f.Message, "not allowed") {
			t.Errorf("%s: videoparse of %s: failure = %+v, want VALIDATION_ERROR (address not allowed)", name, link, f)
		}
	}
}

func TestLocalVideoparseProbesOwnFile(t *testing.T) {
	t.Parallel()
	needTools(t, "ffmpeg", "ffprobe")
	b := setupLocal(t, map[string]string{"run-1": "user"})
	video := b.run(t, &engine.Job{JobID: "v-1", RunID: "run-1", Type: engine.JobVideogen, Request: json.RawMessage(`{"duration":1}`)})
	res := b.run(t, &engine.Job{JobID: "p-1", RunID: "run-1", Type: engine.JobVideoparse,
		Request: json.RawMessage(`{"url":"` + video["video_url"].(string) + `"}`)})
	if res["has_video"] != true || res["has_audio"] != true || res["width"] != float64(1080) || res["source"] != "ffprobe" {
		t.Errorf("videoparse of the user's own video = %v", res)
	}
}

func TestPlatform(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"https://v.douyin.com/abc":                  "douyin",
		"https://www.xiaohongshu.com/explore/1":     "xiaohongshu",
		"http://weibo.com/1/2":                      "weibo",
		"https://www.bilibili.com/video/BV1":        "bilibili",
		"https://example.com/notdouyin.com":         "web",
		"https://evil-douyin.com.example.org/video": "web",
	}
	for in, want := range tests {
		if got := generators.Platform(in); got != want {
			t.Errorf("Platform(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestRemovePartials: the partial files of cut-off renders in the asset folders go; finished
// results and uploads (whatever their names) stay.
func TestRemovePartials(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string]bool{ // file under dir: kept
		"assets/u1/video/job-1.partial.mp4":                    false,
		"assets/u2/image/job-2.partial.png":                    false,
		"assets/u1/video/job-3.mp4":                            true,
		"assets/u1/speech/job-4.wav":                           true,
		"assets/u1/0b7c2f3e-1d2c-4b8e-9a61-2f0c5d7e8a90.mp4":   true,
		"assets/u1/video/notes.partial.txt/inside.partial.mp4": true, // not a file of an asset folder
	}
	for f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	n, err := generators.RemovePartials(dir)
	if err != nil || n != 2 {
		t.Errorf("RemovePartials = %d, %v, want 2, nil", n, err)
	}
	for f, kept := range files {
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(f))); (err == nil) != kept {
			t.Errorf("%s: present %v after RemovePartials, want %v", f, err == nil, kept)
		}
	}
}
