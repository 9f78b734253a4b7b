package app

import (
	"log/slog"
	"maps"
	"path/filepath"

	"github.com/reelforge/reelforge/host/config"
	"github.com/reelforge/reelforge/host/manifest"
	"github.com/reelforge/reelforge/plugins/automation"
	"github.com/reelforge/reelforge/plugins/chatflow"
	"github.com/reelforge/reelforge/plugins/graph"
	"github.com/reelforge/reelforge/plugins/node"
	"github.com/reelforge/reelforge/sdk/engine"
)

// inProcessEngines are the engines the host can also run in its own process, by registry name: node
// (every workflow's fallback) and the external-tool adapters, which answer the callbacks of runs
// whose plugin is down. Each is built from its registry entry's settings, as its plugin's main
// builds it. Every other fact about an engine is in its entry (manifests/engines/<name>.yaml); an
// engine that only runs as a plugin needs nothing here.
func inProcessEngines() map[string]func(settings map[string]string, log *slog.Logger) engine.Engine {
	return map[string]func(map[string]string, *slog.Logger) engine.Engine{
		"node":       func(_ map[string]string, log *slog.Logger) engine.Engine { return node.New(node.Options{Logger: log}) },
		"graph":      graph.Build,
		"automation": automation.Build,
		"chatflow":   chatflow.Build,
	}
}

// EngineSettings resolves the settings of engine entry e against the host's environment; every
// engine also gets callback_base_url (CALLBACK_BASE_URL, or the host's own address) and data_dir
// (DATA_DIR, absolute) unless its entry sets them.
func EngineSettings(e *manifest.Engine, cfg *config.Config) map[string]string {
	out := map[string]string{}
	if e != nil {
		maps.Copy(out, e.Resolve(cfg.Getenv))
	}
	if out["callback_base_url"] == "" {
		out["callback_base_url"] = cfg.CallbackBaseURL
	}
	if out["data_dir"] == "" {
		out["data_dir"] = cfg.DataDir
		if abs, err := filepath.Abs(cfg.DataDir); err == nil {
			out["data_dir"] = abs
		}
	}
	return out
}

// inProcess builds the in-process engines of the registry (node always).
func inProcess(reg *manifest.Registry, cfg *config.Config, log *slog.Logger) map[string]engine.Engine {
	out := map[string]engine.Engine{}
	for name, build := range inProcessEngines() {
		e, ok := reg.Engine(name)
		if !ok && name != manifest.EngineNode {
			continue
		}
		out[name] = build(EngineSettings(e, cfg), log.With("engine", name))
	}
	return out
}
