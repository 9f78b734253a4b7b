package capability

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/reelforge/reelforge/host/config"
	"github.com/reelforge/reelforge/host/plugins"
)

// TestCheck: each capability's state and reason follow the tools on PATH, the external generators
// configured, the generators engine's state, LLM_BASE_URL and the embedder.
func TestCheck(t *testing.T) {
	t.Parallel()
	ready := plugins.Detail{State: plugins.DetailReady}
	without := func(missing ...string) func(string) (string, error) {
		return func(p string) (string, error) {
			for _, m := range missing {
				if p == m {
					return "", exec.ErrNotFound
				}
			}
			return "/usr/bin/" + p, nil
		}
	}
	type want struct{ state, reason string }
	tests := map[string]struct {
		cfg  config.Config
		in   Inputs
		want map[string]want
	}{
		"no ffmpeg, no espeak-ng": {in: Inputs{Generators: ready, LookPath: without("ffmpeg", "ffprobe", "espeak-ng")},
			want: map[string]want{"speech": {Unconfigured, "espeak-ng is not on PATH"}, "video": {Unconfigured, "ffmpeg is not on PATH"},
				"image": {Unconfigured, "ffmpeg is not on PATH"}, "music": {Unconfigured, "ffprobe is not on PATH"},
				"language_model": {Unconfigured, "LLM_BASE_URL is not set: text steps use templates"},
				"embeddings":     {Degraded, "local embedder: not semantic"}}},
		"external speech, a model": {cfg: config.Config{SpeechAPIURL: "http://speech.test", MusicAPIURL: "http://music.test", LLMBaseURL: "http://llm.test"},
			in:   Inputs{Generators: ready, Semantic: true, LookPath: without("espeak-ng")},
			want: map[string]want{"speech": {Ready, ""}, "music": {Ready, ""}, "language_model": {Ready, ""}, "embeddings": {Ready, ""}}},
		"no music generator": {in: Inputs{Generators: ready, LookPath: without()},
			want: map[string]want{"music": {Unconfigured, "MUSIC_API_URL is not set"}}},
		"generators restarting": {in: Inputs{Generators: plugins.Detail{State: plugins.DetailRestarting, Reason: "it crashed"}, LookPath: without()},
			want: map[string]want{"speech": {Degraded, "restarting (it crashed)"}, "video": {Degraded, "restarting"}}},
		"plugins off": {in: Inputs{LookPath: without()},
			want: map[string]want{"speech": {Unconfigured, "does not run"}, "video": {Unconfigured, "does not run"}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tc.in.Config = &tc.cfg
			got := Check(tc.in)
			if len(got) != len(Names) {
				t.Errorf("Check = %v, want the %d capabilities %v", got, len(Names), Names)
			}
			for c, w := range tc.want {
				if got[c].State != w.state || !strings.Contains(got[c].Reason, w.reason) || w.reason == "" && got[c].Reason != "" {
					t.Errorf("%s = %+v, want %s with a reason containing %q", c, got[c], w.state, w.reason)
				}
			}
		})
	}
	// The generators engine itself: degraded while its speech or video tools are missing.
	in := Inputs{Config: &config.Config{}, Generators: ready, LookPath: without("ffmpeg")}
	if d := in.GeneratorsDetail(); d.State != plugins.DetailDegraded || !strings.Contains(d.Reason, "ffmpeg is not on PATH") {
		t.Errorf("GeneratorsDetail without ffmpeg = %+v, want degraded naming ffmpeg", d)
	}
	in.Config.VideogenAPIURL, in.Config.SpeechAPIURL = "http://video.test", "http://speech.test"
	if d := in.GeneratorsDetail(); d.State != plugins.DetailReady {
		t.Errorf("GeneratorsDetail with external generators = %+v, want ready", d)
	}
}
