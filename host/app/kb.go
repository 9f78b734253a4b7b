package app

import (
	"context"
	"log/slog"

	"github.com/reelforge/reelforge/host/config"
	"github.com/reelforge/reelforge/host/content"
	"github.com/reelforge/reelforge/host/kb"
	"github.com/reelforge/reelforge/host/kb/embed"
	"github.com/reelforge/reelforge/host/kb/llm"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/sdk/engine"
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

// kbSearcher adapts the knowledge service to the engines' Host.Search (runs.Searcher) and to the
// local chat fallback (content.Searcher). Both callers have checked the project already.
type kbSearcher struct {
	kb *kb.Service
	st store.Driver
}

// Search implements runs.Searcher, with the visibility of req.UserID (an admin's when the user is one).
func (a kbSearcher) Search(ctx context.Context, req *engine.SearchRequest) ([]engine.SearchHit, error) {
	role := ""
	if u, err := a.st.GetUser(ctx, req.UserID); err == nil {
		role = u.Role
	}
	topK := req.TopK
	if topK <= 0 || topK > kb.MaxTopK {
		topK = kb.DefaultTopK
	}
	hits, err := a.kb.SearchFor(ctx, req.UserID, role, req.ProjectID, req.Query, topK)
	if err != nil {
		return nil, err
	}
	out := make([]engine.SearchHit, len(hits))
	for i, h := range hits {
		out[i] = engine.SearchHit{ChunkID: h.ChunkID, ChunkText: h.ChunkText, Heading: h.Heading, SourceName: h.SourceName,
			Document: h.DocumentTitle, Score: h.Scores.Total}
	}
	return out, nil
}

// SearchKB implements content.Searcher.
func (a kbSearcher) SearchKB(ctx context.Context, userID, role, projectID, query string, topK int) ([]content.KBHit, error) {
	if topK <= 0 || topK > kb.MaxTopK {
		topK = kb.DefaultTopK
	}
	hits, err := a.kb.SearchFor(ctx, userID, role, projectID, query, topK)
	if err != nil {
		return nil, err
	}
	out := make([]content.KBHit, len(hits))
	for i, h := range hits {
		out[i] = content.KBHit{ChunkID: h.ChunkID, Text: h.ChunkText, Heading: h.Heading, Source: h.SourceName,
			Document: h.DocumentTitle, Score: h.Scores.Total}
	}
	return out, nil
}
