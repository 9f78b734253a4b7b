// Package capability says what this host can do of each kind of work a workflow relies on
// (speech, video, music, image, a language model, semantic embeddings) and, where it cannot or
// only in a lesser form, why. /health's capabilities and `reelforge plugins check` print Check's
// answer, so a front end can warn before a creator starts a run that cannot end with its product,
// and an operator sees what to install or set.
//
// The states: ready (it works); degraded (it works in a lesser form, or the engine that does it is
// failing for now); unconfigured (it cannot work until something is installed or set: a program
// not on PATH, a variable not set; the reason says what runs meanwhile, if anything).
package capability

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"

	"github.com/reelforge/reelforge/host/config"
	"github.com/reelforge/reelforge/host/plugins"
	"github.com/reelforge/reelforge/internal/render"
	"github.com/reelforge/reelforge/plugins/generators"
	"github.com/reelforge/reelforge/sdk/engine"
)

// States of a capability.
const (
	Ready        = "ready"
	Degraded     = "degraded"
	Unconfigured = "unconfigured"
)

// Names of the capabilities, in the order they are printed.
var Names = []string{"speech", "video", "music", "image", "language_model", "embeddings"}

// Capability is one capability's state and, when it is not ready, why.
type Capability struct {
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
}

// Inputs is what Check reads.
type Inputs struct {
	Config *config.Config
	// Generators is the generators engine's state (plugins.Detail*): its plugin makes speech,
	// video, music and images. A zero State means it does not run (plugins are switched off or
	// there is no generators entry).
	Generators plugins.Detail
	// Semantic says whether the knowledge base's embedder is semantic (embed.Semantic).
	Semantic bool
	// LookPath finds a program; nil means exec.LookPath (the generators plugin inherits the host's
	// PATH, so what the host finds is what the plugin runs).
	LookPath func(string) (string, error)
}

// Check reports every capability of Names.
func Check(in Inputs) map[string]Capability {
	cfg := in.Config
	out := map[string]Capability{
		"speech": in.media(engine.JobSpeech, "SPEECH_API_URL", cfg.SpeechAPIURL, "speech cannot be made", false),
		"video":  in.media(engine.JobVideogen, "VIDEOGEN_API_URL", cfg.VideogenAPIURL, "videos cannot be rendered", true),
		"music":  in.media(engine.JobMusic, "MUSIC_API_URL", cfg.MusicAPIURL, "a creator's track (music_url) cannot be used", false),
		"image":  in.media(engine.JobVideogen, "VIDEOGEN_API_URL", cfg.VideogenAPIURL, "covers and graphics cannot be rendered", true),
	}
	if m := out["music"]; m.State == Ready && cfg.MusicAPIURL == "" {
		out["music"] = Capability{Unconfigured, "MUSIC_API_URL is not set and there is no local music generator: only a track of the creator's (music_url) is mixed in"}
	}
	out["language_model"] = Capability{State: Ready}
	if cfg.LLMBaseURL == "" {
		out["language_model"] = Capability{Unconfigured, "LLM_BASE_URL is not set: text steps use templates"}
	}
	out["embeddings"] = Capability{State: Ready}
	if !in.Semantic {
		out["embeddings"] = Capability{Degraded, "local embedder: not semantic (knowledge search matches words; set LLM_BASE_URL and EMBEDDING_MODEL for an embedding model)"}
	}
	return out
}

// media is the capability of the generator jobs of jobType: the generators engine must run, then
// an external generator (its variable set) does them, else the local tools must be on PATH;
// drawsText adds what the renderer's fonts cannot draw.
func (in Inputs) media(jobType, variable, url, without string, drawsText bool) Capability {
	switch g := in.Generators; {
	case g.State == "":
		return Capability{Unconfigured, "the generators engine does not run (plugins are switched off or it has no entry): " + without}
	case g.State == plugins.DetailDisabled || g.State == plugins.DetailUnconfigured:
		return Capability{Unconfigured, fmt.Sprintf("the generators engine is %s (%s): %s", g.State, g.Reason, without)}
	case g.State != plugins.DetailReady:
		return Capability{Degraded, fmt.Sprintf("the generators engine is %s (%s): %s until it is back", g.State, g.Reason, without)}
	}
	if url != "" {
		return Capability{State: Ready}
	}
	if missing, packages := in.missing(jobType); len(missing) > 0 {
		return Capability{Unconfigured, fmt.Sprintf("%s: %s (set %s for an external generator, or install Debian's %s: scripts/install-tools.sh)",
			strings.Join(missing, ", "), without, variable, strings.Join(packages, " "))}
	}
	if drawsText {
		if problems := render.FontProblems(); len(problems) > 0 {
			return Capability{Degraded, strings.Join(problems, "; ")}
		}
	}
	return Capability{State: Ready}
}

// missing lists "<program> is not on PATH" for each local tool of jobType not found, and the Debian
// packages that have them.
func (in Inputs) missing(jobType string) (missing, packages []string) {
	look := in.LookPath
	if look == nil {
		look = exec.LookPath
	}
	for _, t := range generators.LocalTools(jobType) {
		if _, err := look(t.Program); err != nil {
			missing = append(missing, t.Program+" is not on PATH")
			if !slices.Contains(packages, t.Package) {
				packages = append(packages, t.Package)
			}
		}
	}
	return missing, packages
}

// GeneratorsDetail is the generators engine's state as /health and plugins check show it: a plugin
// that runs is still not ready while the local tools of speech or video are missing (and no
// external generator does that work): it is degraded, naming them. Its jobs still go to it (a
// link's videoparse, a job an external generator does), so this changes no routing.
func (in Inputs) GeneratorsDetail() plugins.Detail {
	if in.Generators.State != plugins.DetailReady {
		return in.Generators
	}
	var all []string
	for _, j := range []struct{ jobType, url string }{{engine.JobSpeech, in.Config.SpeechAPIURL}, {engine.JobVideogen, in.Config.VideogenAPIURL}} {
		if j.url != "" {
			continue
		}
		if missing, _ := in.missing(j.jobType); len(missing) > 0 {
			for _, m := range missing {
				if !slices.Contains(all, m) {
					all = append(all, m)
				}
			}
		}
	}
	if len(all) == 0 {
		return in.Generators
	}
	return plugins.Detail{State: plugins.DetailDegraded,
		Reason: strings.Join(all, ", ") + ": its speech or video jobs fail (scripts/install-tools.sh installs the tools)"}
}
