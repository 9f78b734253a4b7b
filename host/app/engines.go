package app

import (
	"log/slog"

	"github.com/reelforge/reelforge/host/config"
	"github.com/reelforge/reelforge/host/runs"
	"github.com/reelforge/reelforge/plugins/automation"
	"github.com/reelforge/reelforge/plugins/chatflow"
	"github.com/reelforge/reelforge/plugins/generators"
	"github.com/reelforge/reelforge/plugins/graph"
)

// wireEngines registers the external-tool engines in process (they answer callbacks of runs whose
// plugin is down) and the generator dispatcher (local espeak-ng/ffmpeg work or external generators).
func wireEngines(svc *runs.Service, cfg *config.Config, log *slog.Logger) *generators.Dispatcher {
	svc.InProcess["graph"] = graph.New(graph.Options{RunnerURL: cfg.RunnerURL, CallbackBaseURL: cfg.CallbackBaseURL, Logger: log})
	svc.InProcess["automation"] = automation.New(automation.Options{WebhookURL: cfg.AutomationURL, CallbackBaseURL: cfg.CallbackBaseURL, Logger: log})
	svc.InProcess["chatflow"] = chatflow.New(chatflow.Options{URL: cfg.ChatflowURL, DefaultChatflowID: cfg.ChatflowKBID, Logger: log})
	d := generators.NewDispatcher(generators.Options{MusicURL: cfg.MusicAPIURL, VideogenURL: cfg.VideogenAPIURL,
		SpeechURL: cfg.SpeechAPIURL, VideoparseURL: cfg.VideoparseAPIURL, DataDir: cfg.DataDir, FetchAllow: cfg.ContentFetchAllow,
		CompleteFunc: svc.CompleteJob, OwnerFunc: svc.RunOwner, Logger: log})
	svc.Dispatcher = d
	return d
}
