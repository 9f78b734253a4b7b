package app

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/reelforge/reelforge/internal/testtool"
	"github.com/reelforge/reelforge/sdk/engine"
)

// TestRunSaysTheMaterialsDescription: a creator uploads two photos to a project, one described
// with words of the topic and a focal point, one described with something else; a voiceover_video
// run's template script says the matching description, names the photo in beat_sources, and leaves
// the other out; the render job carries the photo's focal point. SQLite and PostgreSQL.
func TestRunSaysTheMaterialsDescription(t *testing.T) {
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
			hh := setup(t)
			_, body, _, _ := hh.call("POST", "/api/projects", map[string]any{"name": "café"})
			pid := body["data"].(map[string]any)["project"].(map[string]any)["id"].(string)
			const said = "A gooseneck kettle pours slowly over the coffee bed."
			status, up, _, raw := hh.call("POST", "/api/materials/upload", uploadForm(t, "kettle.png", picture(t, "brown"),
				map[string]string{"project_id": pid, "description": said, "focus": "0.3,0.2"}))
			if status != 201 {
				t.Fatalf("upload = %d %s", status, raw)
			}
			kettle := up["data"].(map[string]any)["asset"].(map[string]any)
			if status, _, _, raw := hh.call("POST", "/api/materials/upload", uploadForm(t, "cat.png", picture(t, "gray"),
				map[string]string{"project_id": pid, "description": "Our cat asleep on the windowsill."})); status != 201 {
				t.Fatalf("upload = %d %s", status, raw)
			}

			runID := hh.completedRun(map[string]any{"workflow": "voiceover_video", "project_id": pid,
				"inputs": map[string]any{"topic": "Three reasons to love pour-over coffee", "duration": 10, "quality": "draft"}})
			steps, err := hh.h.Store.ListTraceSteps(context.Background(), runID)
			if err != nil {
				t.Fatal(err)
			}
			var script map[string]any
			for _, st := range steps {
				var ts engine.TraceStep
				if st.StepID == "write_script" && json.Unmarshal(st.Step, &ts) == nil {
					script = ts.Outputs
				}
			}
			text, srcs := fmt.Sprint(script["script"]), fmt.Sprint(script["beat_sources"])
			if !strings.Contains(text, said) || !strings.Contains(srcs, "material: kettle.png") {
				t.Errorf("script %q, beat_sources %s: want the kettle photo's description, named", text, srcs)
			}
			if strings.Contains(text, "cat") || strings.Contains(srcs, "cat.png") {
				t.Errorf("script %q / beat_sources %s say the cat photo, which is not about the topic", text, srcs)
			}
			jobs, err := hh.h.Store.ListRunJobs(context.Background(), runID)
			found := false
			for _, j := range jobs {
				var p struct {
					Focus map[string]struct{ X, Y float64 } `json:"media_focus"`
				}
				if j.Type == engine.JobVideogen && json.Unmarshal(j.Request, &p) == nil {
					f, ok := p.Focus[kettle["file_path"].(string)]
					found = ok && f.X == 0.3 && f.Y == 0.2
				}
			}
			if err != nil || !found {
				t.Errorf("render jobs = %v, %v; want the kettle photo's focus 0.3,0.2 in media_focus", jobs, err)
			}
		})
	}
}
