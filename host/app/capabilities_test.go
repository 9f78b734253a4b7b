package app

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reelforge/reelforge/internal/testtool"
)

// TestHealthWithoutMediaTools: a host whose PATH lacks ffmpeg and espeak-ng says so on /health:
// video, image and speech are not ready, naming the missing program, and the generators engine
// is degraded rather than ready, and a voiceover_video run fails naming the missing program (with
// neither, the narration's espeak-ng; with espeak-ng alone, ffmpeg); with the tools on PATH the
// same host reports them ready. The generators plugin inherits the PATH, as on a fresh machine. Not parallel: it sets PATH for the
// whole process. On SQLite and on PostgreSQL.
func TestHealthWithoutMediaTools(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the generators plugin")
	}
	testtool.Need(t, "espeak-ng", "ffmpeg", "ffprobe")
	if _, err := generatorsPlugin(); err != nil { // built with the full PATH: go is on it
		t.Fatal(err)
	}
	for name, dbURL := range map[string]func(t *testing.T) string{
		"sqlite":   func(*testing.T) string { return "" },
		"postgres": freshDatabase,
	} {
		t.Run(name, func(t *testing.T) {
			db := dbURL(t)
			t.Run("tools on PATH", func(t *testing.T) {
				caps, gen := healthOf(startHost(t, db))
				for _, c := range []string{"speech", "video", "image"} {
					if caps[c]["state"] != "ready" {
						t.Errorf("capabilities.%s = %v, want ready with the tools on PATH", c, caps[c])
					}
				}
				if gen["state"] != "ready" {
					t.Errorf("engine_details.generators = %v, want ready", gen)
				}
			})
			t.Run("tools missing", func(t *testing.T) {
				t.Setenv("PATH", t.TempDir()) // an empty folder: no ffmpeg, no espeak-ng
				hh := startHost(t, freshOr(t, db))
				caps, gen := healthOf(hh)
				for c, tool := range map[string]string{"speech": "espeak-ng", "video": "ffmpeg", "image": "ffmpeg"} {
					if caps[c]["state"] == "ready" || !strings.Contains(caps[c]["reason"].(string), tool+" is not on PATH") {
						t.Errorf("capabilities.%s = %v, want not ready naming %s", c, caps[c], tool)
					}
				}
				if gen["state"] != "degraded" || !strings.Contains(gen["reason"].(string), "ffmpeg is not on PATH") {
					t.Errorf("engine_details.generators = %v, want degraded naming ffmpeg", gen)
				}
				_, body, _, _ := hh.call("GET", "/health", nil)
				if body["status"] != "degraded" || body["engines"].(map[string]any)["generators"] != "degraded" {
					t.Errorf("/health status %v, engines %v; want degraded with generators degraded", body["status"], body["engines"])
				}
				// The run's first product is the narration: it fails on the speech step, naming espeak-ng.
				failsNaming(hh, "espeak-ng is not on PATH")
			})
			t.Run("ffmpeg missing", func(t *testing.T) {
				espeak, err := exec.LookPath("espeak-ng")
				if err != nil {
					t.Fatal(err)
				}
				dir := t.TempDir() // a folder with espeak-ng only
				if err := os.Symlink(espeak, filepath.Join(dir, "espeak-ng")); err != nil {
					t.Fatal(err)
				}
				t.Setenv("PATH", dir)
				hh := startHost(t, freshOr(t, db))
				caps, _ := healthOf(hh)
				if caps["speech"]["state"] != "ready" || caps["video"]["state"] == "ready" || !strings.Contains(caps["video"]["reason"].(string), "ffmpeg is not on PATH") {
					t.Errorf("capabilities speech %v, video %v; want speech ready and video not, naming ffmpeg", caps["speech"], caps["video"])
				}
				failsNaming(hh, "ffmpeg is not on PATH")
			})
		})
	}
}

// failsNaming starts a voiceover_video run and checks that it ends failed with an error whose
// message contains want.
func failsNaming(hh *hostHarness, want string) {
	hh.t.Helper()
	_, body, _, _ := hh.call("POST", "/api/projects", map[string]any{"name": "films"})
	pid := body["data"].(map[string]any)["project"].(map[string]any)["id"].(string)
	status, body, _, raw := hh.call("POST", "/api/workflow/start", map[string]any{"workflow": "voiceover_video", "project_id": pid,
		"inputs": map[string]any{"topic": "Coffee in space 🚀☕", "duration": 5}})
	if status >= 300 {
		hh.t.Fatalf("start voiceover_video: %d %s", status, raw)
	}
	runID, _ := body["run_id"].(string)
	if d, ok := body["data"].(map[string]any); ok && runID == "" {
		runID, _ = d["run_id"].(string)
	}
	var rb map[string]any
	// 5 minutes: a guard against a run that never ends.
	testtool.Eventually(hh.t, 5*time.Minute, "voiceover_video's end", func() bool {
		_, rb, _, raw = hh.call("GET", "/api/workflow/status/"+runID, nil)
		return rb["status"] == "failed" || rb["status"] == "completed" || rb["status"] == "cancelled"
	})
	if rb["status"] != "failed" {
		hh.t.Fatalf("voiceover_video ended %s, want failed naming %q: %s", rb["status"], want, raw)
	}
	e, _ := rb["error"].(map[string]any)
	if msg, _ := e["message"].(string); !strings.Contains(msg, want) {
		hh.t.Errorf("voiceover_video failed with %v, want its error to say %q", rb["error"], want)
	}
	hh.t.Logf("voiceover_video failed: %v", rb["error"])
}

// freshOr is db for SQLite (each host has its own DATA_DIR) and a database of its own for
// PostgreSQL.
func freshOr(t *testing.T, db string) string {
	if db == "" {
		return ""
	}
	return freshDatabase(t)
}

// healthOf waits until the generators plugin has started (its state is no longer restarting) and
// returns /health's capabilities and the generators engine's details.
func healthOf(hh *hostHarness) (caps map[string]map[string]any, gen map[string]any) {
	hh.t.Helper()
	var body map[string]any
	var raw []byte
	// Past 30 s the answer is checked as it is: a plugin still restarting shows in gen.
	testtool.Within(30*time.Second, func() bool {
		var status int
		status, body, _, raw = hh.call("GET", "/health", nil)
		if status != 200 {
			hh.t.Fatalf("/health = %d %s", status, raw)
		}
		gen, _ = body["engine_details"].(map[string]any)["generators"].(map[string]any)
		return gen != nil && gen["state"] != "restarting"
	})
	caps = map[string]map[string]any{}
	for name, c := range body["capabilities"].(map[string]any) {
		caps[name] = c.(map[string]any)
	}
	for _, want := range []string{"speech", "video", "music", "image", "language_model", "embeddings"} {
		if caps[want] == nil {
			hh.t.Errorf("/health capabilities has no %s: %s", want, raw)
		}
	}
	return caps, gen
}
