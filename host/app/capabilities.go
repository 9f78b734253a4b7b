package app

import (
	"github.com/reelforge/reelforge/host/capability"
	"github.com/reelforge/reelforge/host/config"
	"github.com/reelforge/reelforge/host/kb/embed"
	"github.com/reelforge/reelforge/host/plugins"
)

// capabilityInputs is what capability.Check reads of this host: its configuration, the
// generators engine's state (a zero Detail: it does not run) and the knowledge base's embedder as
// newKB picks it.
func capabilityInputs(cfg *config.Config, generators plugins.Detail) capability.Inputs {
	return capability.Inputs{Config: cfg, Generators: generators, Semantic: embed.Semantic(kbEmbedder(cfg))}
}

// Capabilities is what this host can do of each capability (host/capability), given the
// generators engine's state: /health's capabilities, and what `reelforge plugins check` prints.
func Capabilities(cfg *config.Config, generators plugins.Detail) map[string]capability.Capability {
	return capability.Check(capabilityInputs(cfg, generators))
}

// GeneratorsDetail is the generators engine's state as /health and plugins check show it: degraded,
// naming them, while the local tools of its speech or video jobs are missing
// (capability.Inputs.GeneratorsDetail).
func GeneratorsDetail(cfg *config.Config, generators plugins.Detail) plugins.Detail {
	return capabilityInputs(cfg, generators).GeneratorsDetail()
}
