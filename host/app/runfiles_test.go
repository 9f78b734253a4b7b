package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/reelforge/reelforge/host/blob/blobtest"
	"github.com/reelforge/reelforge/host/config"
	"github.com/reelforge/reelforge/host/events"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/internal/testtool"
)

// freshDatabase makes an empty PostgreSQL database next to TEST_DATABASE_URL's for one host
// (the host migrates the public schema of its database), dropped when the test ends.
func freshDatabase(t *testing.T) string {
	t.Helper()
	base := os.Getenv("TEST_DATABASE_URL")
	if base == "" {
		t.Skip("set TEST_DATABASE_URL to run PostgreSQL tests")
	}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	name := "reelforge_app_" + strings.ReplaceAll(uuid.NewString()[:12], "-", "")
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(base)
	u.Path = "/" + name
	t.Cleanup(func() {
		_, _ = admin.Exec(context.Background(), "DROP DATABASE "+name+" WITH (FORCE)")
		admin.Close(context.Background())
	})
	return u.String()
}

// generatorsPlugin builds the generators plugin once for the package's tests: generator jobs run
// only in it. The folder holds no other plugin, so the other engines run in the test's process.
var generatorsPlugin = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "reelforge-app-plugins-")
	if err != nil {
		return "", err
	}
	out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "generators-plugin"),
		"github.com/reelforge/reelforge/plugins/generators/cmd/generators-plugin").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build generators-plugin: %v\n%s", err, out)
	}
	return dir, nil
})

// hostHarness is a wired host served through app.Test, with the generators plugin (the other
// engines in process).
type hostHarness struct {
	t     *testing.T
	h     *Host
	token string
}

func startHost(t *testing.T, databaseURL string, extra ...string) *hostHarness {
	t.Helper()
	pluginDir, err := generatorsPlugin()
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"DATA_DIR": t.TempDir(), "MANIFEST_DIR": "../../manifests", "PLUGIN_DIR": pluginDir,
		"DATABASE_URL": databaseURL}
	for i := 0; i+1 < len(extra); i += 2 {
		env[extra[i]] = extra[i+1]
	}
	cfg, err := config.LoadFrom(func(k string) (string, bool) { v, ok := env[k]; return v, ok && v != "" })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h, err := New(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	_ = h.Plugins.Start(ctx) // the engines without a binary here stay disabled: they run in process
	h.Runs.StartExecutor(ctx)
	h.Runs.StartSweeper(ctx)
	if err := h.Tasks.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		h.Runs.StopSweeper()
		h.Runs.StopExecutor()
		h.Runs.StopJobs()
		h.Plugins.Stop()
		h.Tasks.Stop()
		h.Store.Close()
	})
	sess, err := h.Server.Auth.Register(ctx, "creator-"+uuid.NewString()[:8]+"@example.com", "password-123", "creator")
	if err != nil {
		t.Fatal(err)
	}
	return &hostHarness{t: t, h: h, token: sess.Token}
}

func (hh *hostHarness) call(method, path string, body any) (int, map[string]any, http.Header, []byte) {
	hh.t.Helper()
	var rd io.Reader
	ctype := "application/json"
	switch b := body.(type) {
	case nil:
	case *multipartBody:
		rd, ctype = &b.buf, b.ctype
	default:
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req := httptest.NewRequest(method, path, rd)
	req.Header.Set("Content-Type", ctype)
	if hh.token != "" { // none: a visitor with a shared link
		req.Header.Set("Authorization", "Bearer "+hh.token)
	}
	res, err := hh.h.Server.App().Test(req, -1)
	if err != nil {
		hh.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return res.StatusCode, out, res.Header, raw
}

// TestRunFilesOnEveryStartPath: however a run is started (workflow start, a task, dispatch-task,
// the orchestrator, a scheduler trigger), the speech file its local generator makes is an asset of
// the run and its project, with a file_url its owner downloads, announced once by
// task.asset.uploaded. On SQLite and on PostgreSQL.
func TestRunFilesOnEveryStartPath(t *testing.T) {
	if testing.Short() {
		t.Skip("runs espeak-ng")
	}
	testtool.Need(t, "espeak-ng")
	t.Parallel()
	for name, dbURL := range map[string]func(t *testing.T) string{
		"sqlite":   func(*testing.T) string { return "" },
		"postgres": freshDatabase,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			hh := startHost(t, dbURL(t))
			_, body, _, _ := hh.call("POST", "/api/projects", map[string]any{"name": "films"})
			pid := body["data"].(map[string]any)["project"].(map[string]any)["id"].(string)
			inputs := map[string]any{"topic": "morning light over the harbour", "language": "en"}
			task := map[string]any{"projectId": pid, "type": "voiceover", "inputParams": inputs}
			paths := map[string]struct {
				path string
				body map[string]any
			}{
				"workflow start": {"/api/workflow/start", map[string]any{"workflow": "voiceover", "project_id": pid, "inputs": inputs}},
				"tasks":          {"/api/tasks", task},
				"dispatch-task":  {"/api/project/dispatch-task", task},
				"orchestrator":   {"/api/orchestrator/run", map[string]any{"workflow_id": "voiceover", "project_id": pid, "inputs": inputs}},
				"scheduler":      {"/api/scheduler/trigger", map[string]any{"workflow_id": "voiceover", "project_id": pid, "inputs": inputs}},
			}
			uploaded := map[string]int{} // task.asset.uploaded events by asset id, all paths
			for how, p := range paths {
				status, body, _, raw := hh.call("POST", p.path, p.body)
				if status >= 300 {
					t.Fatalf("%s: %d %s", how, status, raw)
				}
				runID, taskID := hh.runOf(how, body)
				assets, err := hh.h.Store.ListRunAssets(context.Background(), runID)
				if err != nil || len(assets) != 1 {
					t.Fatalf("%s: run assets = %+v, %v; want the speech file", how, assets, err)
				}
				a := assets[0]
				var meta map[string]any
				_ = json.Unmarshal(a.Metadata, &meta)
				if a.FileType != store.AssetAudio || a.ProjectID != pid || a.FileSize < 1000 || a.SourceTaskID != taskID ||
					meta["duration"] == nil || meta["run_id"] != runID {
					t.Errorf("%s: asset = %+v (metadata %v)", how, a, meta)
				}
				evs, err := hh.h.Store.ClaimOutboxEvents(context.Background(), &store.ClaimOutboxParams{Limit: 1000,
					Token: uuid.NewString(), Lease: time.Hour})
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range evs {
					var ev struct {
						Data struct {
							AssetID string `json:"assetId"`
						} `json:"data"`
					}
					if e.Event == events.TaskAssetUploaded && json.Unmarshal(e.Payload, &ev) == nil {
						uploaded[ev.Data.AssetID]++
					}
				}
				if uploaded[a.ID] != 1 {
					t.Errorf("%s: task.asset.uploaded sent %d times for the speech file, want once", how, uploaded[a.ID])
				}
				status, _, hdr, got := hh.call("GET", a.FileURL, nil)
				if status != 200 || hdr.Get("Content-Type") != "audio/wav" || int64(len(got)) != a.FileSize {
					t.Errorf("%s: GET %s = %d %s, %d bytes; want the %d-byte WAV", how, a.FileURL, status, hdr.Get("Content-Type"), len(got), a.FileSize)
				}
			}
		})
	}
}

// completedRun starts a run (a POST /api/workflow/start body) and waits for it to complete.
func (hh *hostHarness) completedRun(start map[string]any) string {
	hh.t.Helper()
	_, body, _, raw := hh.call("POST", "/api/workflow/start", start)
	if id, _ := body["run_id"].(string); id == "" {
		hh.t.Fatalf("start = %s", raw)
	}
	runID, _ := hh.runOf(fmt.Sprint(start["workflow"]), body)
	return runID
}

// runOf waits for the run a start path made to complete and returns its id (and its task's).
func (hh *hostHarness) runOf(how string, body map[string]any) (runID, taskID string) {
	hh.t.Helper()
	if d, ok := body["data"].(map[string]any); ok {
		if task, ok := d["task"].(map[string]any); ok {
			taskID = task["id"].(string)
		} else {
			runID, _ = d["run_id"].(string)
		}
	}
	if runID == "" && taskID == "" {
		runID, _ = body["run_id"].(string)
	}
	// 5 minutes: a guard against a run that never ends, not a speed target (make bench has those):
	// a 1080p render on a machine busy with the rest of the suite takes a good part of a minute.
	testtool.Eventually(hh.t, 5*time.Minute, how+": the run's completion", func() bool {
		if taskID != "" {
			_, tb, _, _ := hh.call("GET", "/api/tasks/"+taskID, nil)
			task := tb["data"].(map[string]any)["task"].(map[string]any)
			if task["status"] == store.TaskFailed || task["status"] == store.TaskCancelled {
				hh.t.Fatalf("%s: task %v", how, task)
			}
			if task["status"] != store.TaskSuccess {
				return false
			}
			runID = task["run_id"].(string)
		}
		_, rb, _, raw := hh.call("GET", "/api/workflow/status/"+runID, nil)
		switch rb["status"] {
		case "failed", "cancelled":
			hh.t.Fatalf("%s: run %s", how, raw)
		}
		return rb["status"] == "completed"
	})
	return runID, taskID
}

// TestNonsenseRefused: on every start path an unknown workflow or task type is refused (404
// WORKFLOW_NOT_FOUND where a workflow is named, 400 for a task type), and so are inputs the
// manifest refuses, with the field named, before anything runs. On SQLite and on PostgreSQL.
func TestNonsenseRefused(t *testing.T) {
	t.Parallel()
	for name, dbURL := range map[string]func(t *testing.T) string{
		"sqlite":   func(*testing.T) string { return "" },
		"postgres": freshDatabase,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			hh := startHost(t, dbURL(t))
			_, body, _, _ := hh.call("POST", "/api/projects", map[string]any{"name": "films"})
			pid := body["data"].(map[string]any)["project"].(map[string]any)["id"].(string)
			// Each start path with a workflow (or type) and inputs.
			paths := map[string]func(wf string, in map[string]any) (string, map[string]any){
				"workflow start": func(wf string, in map[string]any) (string, map[string]any) {
					return "/api/workflow/start", map[string]any{"workflow": wf, "project_id": pid, "inputs": in}
				},
				"tasks": func(wf string, in map[string]any) (string, map[string]any) {
					return "/api/tasks", map[string]any{"projectId": pid, "type": wf, "inputParams": in}
				},
				"dispatch-task": func(wf string, in map[string]any) (string, map[string]any) {
					return "/api/project/dispatch-task", map[string]any{"projectId": pid, "type": wf, "inputParams": in}
				},
				"orchestrator": func(wf string, in map[string]any) (string, map[string]any) {
					return "/api/orchestrator/run", map[string]any{"workflow_id": wf, "project_id": pid, "inputs": in}
				},
				"scheduler": func(wf string, in map[string]any) (string, map[string]any) {
					return "/api/scheduler/trigger", map[string]any{"workflow_id": wf, "project_id": pid, "inputs": in}
				},
			}
			cases := map[string]struct {
				wf         string
				in         map[string]any
				wantStatus int // tasks: 400 where the others say 404
				wantField  string
			}{
				"unknown workflow":   {"nonsense", map[string]any{"topic": "x"}, 404, "type"},
				"nothing to make":    {"voiceover_video", map[string]any{}, 400, "topic"},
				"blank topic":        {"voiceover_video", map[string]any{"topic": "  ", "platform": "douyin"}, 400, "topic"},
				"wrong type":         {"voiceover_video", map[string]any{"topic": 5}, 400, "topic"},
				"too long":           {"graphic", map[string]any{"topic": strings.Repeat("x", 201)}, 400, "topic"},
				"duration as string": {"video", map[string]any{"topic": "x", "duration": "long"}, 400, "duration"},
			}
			for how, mk := range paths {
				for name, tc := range cases {
					path, req := mk(tc.wf, tc.in)
					status, body, _, raw := hh.call("POST", path, req)
					want, code := tc.wantStatus, "VALIDATION_ERROR"
					if want == 404 {
						code = "WORKFLOW_NOT_FOUND"
						if strings.Contains(path, "task") {
							want, code = 400, "VALIDATION_ERROR"
						}
					}
					e, _ := body["error"].(map[string]any)
					if status != want || e["code"] != code {
						t.Errorf("%s, %s: %d %s; want %d %s", how, name, status, raw, want, code)
						continue
					}
					if code == "VALIDATION_ERROR" && !strings.Contains(fmt.Sprint(e["message"], e["details"]), tc.wantField) {
						t.Errorf("%s, %s: %s does not name %q", how, name, raw, tc.wantField)
					}
				}
			}
			// Nothing was started or stored by any of them.
			if _, body, _, raw := hh.call("GET", "/api/projects/"+pid+"/tasks", nil); len(body["data"].(map[string]any)["tasks"].([]any)) != 0 {
				t.Errorf("tasks stored: %s", raw)
			}
			if runs, _, err := hh.h.Store.ListRuns(context.Background(), store.ListRunsParams{Limit: 10}); err != nil || len(runs) != 0 {
				t.Errorf("runs stored: %d, %v", len(runs), err)
			}
		})
	}
}

// multipartBody is an upload form.
type multipartBody struct {
	buf   bytes.Buffer
	ctype string
}

func uploadForm(t *testing.T, name string, data []byte, fields map[string]string) *multipartBody {
	t.Helper()
	b := &multipartBody{}
	w := multipart.NewWriter(&b.buf)
	for k, v := range fields {
		_ = w.WriteField(k, v)
	}
	part, err := w.CreateFormFile("file", name)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = part.Write(data)
	_ = w.Close()
	b.ctype = w.FormDataContentType()
	return b
}

// picture is a PNG of one colour made by ffmpeg.
func picture(t *testing.T, colour string) []byte {
	t.Helper()
	p := filepath.Join(t.TempDir(), "p.png")
	out, err := exec.Command("ffmpeg", "-y", "-loglevel", "error", "-f", "lavfi", "-i", "color=c="+colour+":s=800x600", "-frames:v", "1", p).CombinedOutput()
	if err != nil {
		t.Fatalf("ffmpeg: %v %s", err, out)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRenderUsesProjectMaterial: pictures uploaded to a project are what its voiceover_video
// shows, and the video is an asset whose file_url serves it; with the files in an S3 bucket too
// (the material is copied out for the renderer, the video copied in). SQLite with the data folder,
// PostgreSQL with S3.
func TestRenderUsesProjectMaterial(t *testing.T) {
	if testing.Short() {
		t.Skip("runs espeak-ng and ffmpeg")
	}
	testtool.Need(t, "espeak-ng", "ffmpeg")
	t.Parallel()
	for name, setup := range map[string]func(t *testing.T) *hostHarness{
		"sqlite/local": func(t *testing.T) *hostHarness { return startHost(t, "") },
		"postgres/s3": func(t *testing.T) *hostHarness {
			db := freshDatabase(t)
			s3 := blobtest.S3(t, "media")
			return startHost(t, db, "S3_BUCKET", s3.Bucket, "S3_ENDPOINT", s3.Endpoint, "S3_ACCESS_KEY_ID", s3.AccessKeyID,
				"S3_SECRET_ACCESS_KEY", s3.SecretAccessKey, "S3_USE_PATH_STYLE", "true")
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			hh := setup(t)
			_, body, _, _ := hh.call("POST", "/api/projects", map[string]any{"name": "harbour"})
			pid := body["data"].(map[string]any)["project"].(map[string]any)["id"].(string)
			for _, c := range []string{"red", "blue"} {
				if status, _, _, raw := hh.call("POST", "/api/materials/upload", uploadForm(t, c+".png", picture(t, c), map[string]string{"project_id": pid})); status != 201 {
					t.Fatalf("upload = %d %s", status, raw)
				}
			}
			runID := hh.completedRun(map[string]any{"workflow": "voiceover_video", "project_id": pid,
				"inputs": map[string]any{"topic": "the harbour at dawn", "duration": 8}})
			_, res, _, raw := hh.call("GET", "/api/workflow/result/"+runID, nil)
			render, _ := res["outputs"].(map[string]any)["render"].(map[string]any)
			if render == nil || render["images"] != 2.0 || render["video_url"] == nil {
				t.Fatalf("render = %s, want a video of the project's two pictures", raw)
			}
			status, _, hdr, video := hh.call("GET", render["video_url"].(string), nil)
			if status != 200 || hdr.Get("Content-Type") != "video/mp4" || len(video) < 10000 {
				t.Errorf("GET video = %d %s, %d bytes", status, hdr.Get("Content-Type"), len(video))
			}
			assets, err := hh.h.Store.ListRunAssets(context.Background(), runID)
			kinds := map[string]int{}
			for _, a := range assets {
				kinds[a.FileType+" "+a.MimeType]++
				status, _, hdr, got := hh.call("GET", a.FileURL, nil)
				if status != 200 || hdr.Get("Content-Type") != a.MimeType || int64(len(got)) != a.FileSize {
					t.Errorf("GET %s = %d %s, %d bytes; want its %d bytes of %s", a.FileURL, status, hdr.Get("Content-Type"), len(got), a.FileSize, a.MimeType)
				}
			}
			want := map[string]int{"audio audio/wav": 1, "video video/mp4": 1, "image image/jpeg": 1,
				"captions text/vtt; charset=utf-8": 1, "captions application/x-subrip; charset=utf-8": 1}
			if err != nil || !maps.Equal(kinds, want) {
				t.Errorf("run assets by type = %v, %v; want the speech, the video, its cover and its captions in WebVTT and SRT", kinds, err)
			}
			for _, k := range []string{"thumbnail_url", "captions_vtt_url", "captions_srt_url"} {
				if u, _ := render[k].(string); u == "" {
					t.Errorf("render has no %s: %v", k, render)
				}
			}
		})
	}
}

// TestRenderHonoursInputs: a voiceover_video run takes its media in every reference form the
// API hands out (the asset id, its file_url, its /api/assets/files URL signed as a listing hands it
// out, with scheme and host), music by its file_url, the frame it asks for (1:1) and a voice espeak-ng has; the
// project's own photo is found among 300 other assets (files runs made, audio); an input the
// workflow does not declare is named in the warnings. References no render could use, an unknown
// voice and an unknown frame are refused with a 400 naming them, before any run is stored.
func TestRenderHonoursInputs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs espeak-ng and ffmpeg")
	}
	testtool.Need(t, "espeak-ng", "ffmpeg")
	t.Parallel()
	for name, setup := range map[string]func(t *testing.T) *hostHarness{
		"sqlite":   func(t *testing.T) *hostHarness { return startHost(t, "") },
		"postgres": func(t *testing.T) *hostHarness { return startHost(t, freshDatabase(t)) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			hh := setup(t)
			_, body, _, _ := hh.call("POST", "/api/projects", map[string]any{"name": "harbour"})
			pid := body["data"].(map[string]any)["project"].(map[string]any)["id"].(string)
			upload := func(name string, data []byte) *store.Asset {
				t.Helper()
				status, body, _, raw := hh.call("POST", "/api/materials/upload", uploadForm(t, name, data, map[string]string{"project_id": pid}))
				if status != 201 {
					t.Fatalf("upload %s = %d %s", name, status, raw)
				}
				a, err := hh.h.Store.GetAsset(ctx, body["data"].(map[string]any)["asset"].(map[string]any)["id"].(string))
				if err != nil {
					t.Fatal(err)
				}
				return a
			}
			own := upload("yellow.png", picture(t, "yellow")) // the project's photo, oldest of all
			owner := own.UserID
			for i := range 300 {
				typ, run := store.AssetAudio, ""
				if i%2 == 0 {
					typ, run = store.AssetImage, uuid.NewString() // a run's cover
				}
				if err := hh.h.Store.CreateAsset(ctx, &store.Asset{ID: uuid.NewString(), UserID: owner, ProjectID: pid,
					FilePath: "assets/" + owner + "/gen/" + uuid.NewString() + ".png", FileType: typ, SourceRunID: run}); err != nil {
					t.Fatal(err)
				}
			}
			red, green, blue := upload("red.png", picture(t, "red")), upload("green.png", picture(t, "green")), upload("blue.png", picture(t, "blue"))
			music := upload("music.wav", tone(t))
			theirs := &store.Asset{ID: uuid.NewString(), UserID: uuid.NewString(), FilePath: "assets/x/y.png", FileType: store.AssetImage}
			if err := hh.h.Store.CreateAsset(ctx, theirs); err != nil {
				t.Fatal(err)
			}
			filesURL := "/api/assets/files/" + strings.TrimPrefix(blue.FilePath, "assets/")
			signed := "http://creator.example" + hh.h.FileURLs.Sign(filesURL) // as a listing hands it out
			altered := strings.Replace(signed, "signature=", "signature=0", 1)

			refused := map[string]struct {
				inputs map[string]any
				field  string
			}{
				"unknown asset":     {map[string]any{"media": uuid.NewString()}, "media[0]"},
				"another's asset":   {map[string]any{"media": red.ID + "," + theirs.ID}, "media[1]"},
				"another's URL":     {map[string]any{"media": "/api/materials/" + theirs.ID + "/file"}, "media[0]"},
				"audio as media":    {map[string]any{"media": music.FileURL}, "media[0]"},
				"outside link":      {map[string]any{"media": "https://example.com/a.png"}, "media[0]"},
				"picture as music":  {map[string]any{"music_url": red.FileURL}, "music_url"},
				"altered signature": {map[string]any{"media": altered}, "media[0]"},
				"unknown voice":     {map[string]any{"voice": "Samantha"}, "voice"},
				"unknown frame":     {map[string]any{"aspect_ratio": "2:1"}, "aspect_ratio"},
			}
			for what, tc := range refused {
				in := map[string]any{"topic": "the harbour"}
				maps.Copy(in, tc.inputs)
				status, body, _, raw := hh.call("POST", "/api/workflow/start", map[string]any{"workflow": "voiceover_video", "project_id": pid, "inputs": in})
				e, _ := body["error"].(map[string]any)
				if msg, _ := e["message"].(string); status != 400 || e["code"] != "VALIDATION_ERROR" || !strings.HasPrefix(msg, tc.field+":") {
					t.Errorf("%s: start = %d %s; want 400 naming %s", what, status, raw, tc.field)
				}
			}

			_, body, _, raw := hh.call("POST", "/api/workflow/start", map[string]any{"workflow": "voiceover_video", "project_id": pid,
				"inputs": map[string]any{"topic": "the harbour at dawn", "duration": 6, "aspect_ratio": "1:1", "voice": "en-us",
					"media":     strings.Join([]string{red.ID, green.FileURL, signed}, ", "),
					"music_url": music.FileURL, "colour": "red"}})
			runID, _ := body["run_id"].(string)
			if runID == "" {
				t.Fatalf("start = %s", raw)
			}
			hh.runOf("voiceover_video", body)
			_, res, _, raw := hh.call("GET", "/api/workflow/result/"+runID, nil)
			out, _ := res["outputs"].(map[string]any)
			render, _ := out["render"].(map[string]any)
			speech, _ := out["speech"].(map[string]any)
			if render == nil || render["images"] != 4.0 || render["width"] != render["height"] || render["music"] == nil || speech["voice"] != "en-us" {
				t.Fatalf("render = %v, speech voice %v; want the 3 given pictures and the project's photo in a square video with the music, spoken by en-us (%s)",
					render, speech["voice"], raw)
			}
			ws, _ := res["warnings"].([]any)
			if w, _ := firstOf(ws).(map[string]any); w["input"] != "colour" {
				t.Errorf("warnings = %v, want the ignored input colour", res["warnings"])
			}
		})
	}
}

// tone is two seconds of a 440 Hz tone as WAV, made by ffmpeg.
func tone(t *testing.T) []byte {
	t.Helper()
	p := filepath.Join(t.TempDir(), "t.wav")
	out, err := exec.Command("ffmpeg", "-y", "-loglevel", "error", "-f", "lavfi", "-i", "sine=frequency=440:duration=2", p).CombinedOutput()
	if err != nil {
		t.Fatalf("ffmpeg: %v %s", err, out)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// firstOf is the first element of xs, nil when there is none.
func firstOf(xs []any) any {
	if len(xs) == 0 {
		return nil
	}
	return xs[0]
}
