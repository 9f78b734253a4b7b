package app

import (
	"log/slog"

	"github.com/reelforge/reelforge/host/config"
	"github.com/reelforge/reelforge/host/kb"
	"github.com/reelforge/reelforge/host/kb/embed"
	"github.com/reelforge/reelforge/host/kb/llm"
	"github.com/reelforge/reelforge/host/store"
)

// newKB builds the knowledge base: the local embedder and the extractive answerer by default; an
// OpenAI-compatible embedder when LLM_BASE_URL and EMBEDDING_MODEL are set, and the chat model
// (asks, rerank) when LLM_BASE_URL is set.
func newKB(cfg *config.Config, st store.Driver, log *slog.Logger) *kb.Service {
	opt := kb.Options{AskModel: cfg.KBAskModel, RerankOn: cfg.KBRerankOn, RerankModel: cfg.KBRerankModel,
		MinScore: cfg.KBMinScore, Logger: log}
	if cfg.LLMBaseURL != "" {
		opt.Chat = llm.NewClient(llm.ClientConfig{BaseURL: cfg.LLMBaseURL, APIKey: cfg.LLMAPIKey})
		if cfg.EmbeddingModel != "" {
			opt.Embedder = embed.NewClient(embed.ClientConfig{BaseURL: cfg.LLMBaseURL, APIKey: cfg.LLMAPIKey, Model: cfg.EmbeddingModel})
		}
	}
	return kb.New(st, opt)
}
