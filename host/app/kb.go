package app

import (
	"context"
	"log/slog"

	"github.com/reelforge/reelforge/host/config"
	"github.com/reelforge/reelforge/host/content"
	"github.com/reelforge/reelforge/host/kb"
	"github.com/reelforge/reelforge/host/kb/clean"
	"github.com/reelforge/reelforge/host/kb/embed"
	"github.com/reelforge/reelforge/host/kb/llm"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/sdk/engine"
)

// newKB builds the knowledge base: the local embedder and the extractive answerer by default; an
// OpenAI-compatible embedder when LLM_BASE_URL and EMBEDDING_MODEL are set, and the chat model
// (asks, rerank) when LLM_BASE_URL is set.
func newKB(cfg *config.Config, st store.Driver, log *slog.Logger, holder string) *kb.Service {
	opt := kb.Options{AskModel: cfg.KBAskModel, RerankOn: cfg.KBRerankOn, RerankModel: cfg.KBRerankModel,
		MinScore: cfg.KBMinScore, VectorCacheMB: cfg.KBVectorCacheMB, Logger: log, Holder: holder, Lease: cfg.Lease}
	if cfg.KBVectorCacheMB == 0 {
		opt.VectorCacheMB = -1 // KB_VECTOR_CACHE_MB=0: no cache (kb.Options' 0 is its default)
	}
	if cfg.LLMBaseURL != "" {
		opt.Chat = llm.NewClient(llm.ClientConfig{BaseURL: cfg.LLMBaseURL, APIKey: cfg.LLMAPIKey})
	}
	opt.Embedder = kbEmbedder(cfg)
	return kb.New(st, opt)
}

// kbEmbedder is the knowledge base's embedder: an OpenAI-compatible one when LLM_BASE_URL and
// EMBEDDING_MODEL are set, else the local one. /health's embeddings capability reads it too.
func kbEmbedder(cfg *config.Config) embed.Embedder {
	if cfg.LLMBaseURL != "" && cfg.EmbeddingModel != "" {
		return embed.NewClient(embed.ClientConfig{BaseURL: cfg.LLMBaseURL, APIKey: cfg.LLMAPIKey, Model: cfg.EmbeddingModel})
	}
	return embed.NewLocal()
}

// kbSearch adapts the knowledge base to its two in-process consumers: the run engines'
// Host.Search (runs.Searcher) and the local chat fallback (content.Searcher). Both search with the
// visibility of the user they name.
type kbSearch struct{ kb *kb.Service }

// Search implements runs.Searcher: runs make content, so internal sources are left out and the
// text is cleaned (kb.Service.SearchForContent). A search to answer a question (req.Ground, the
// answer step's) gets the hits that ground an answer by the rule of Ask (kb.Service.SearchForAnswer),
// cleaned the same way: the decision is the host's, for every path.
func (k kbSearch) Search(ctx context.Context, req *engine.SearchRequest) ([]engine.SearchHit, error) {
	var hits []kb.Hit
	var err error
	if req.Ground {
		hits, err = k.kb.SearchForAnswer(ctx, req.UserID, "", req.ProjectID, req.Query, req.TopK)
	} else {
		hits, err = k.kb.SearchForContent(ctx, req.UserID, "", req.ProjectID, req.Query, req.TopK)
	}
	if err != nil {
		return nil, err
	}
	out := make([]engine.SearchHit, 0, len(hits))
	for _, h := range hits {
		if req.Ground {
			h.ChunkText = clean.Text(h.ChunkText)
		}
		out = append(out, engine.SearchHit{ChunkID: h.ChunkID, ChunkText: h.ChunkText, Heading: h.Heading,
			SourceName: h.SourceName, Document: h.DocumentTitle, Score: h.Scores.Total})
	}
	return out, nil
}

// SearchKB implements content.Searcher: the passages that ground a chat answer
// (kb.Service.SearchForAnswer).
func (k kbSearch) SearchKB(ctx context.Context, userID, role, projectID, query string, topK int) ([]content.KBHit, error) {
	hits, err := k.kb.SearchForAnswer(ctx, userID, role, projectID, query, topK)
	if err != nil {
		return nil, err
	}
	out := make([]content.KBHit, 0, len(hits))
	for _, h := range hits {
		out = append(out, content.KBHit{ChunkID: h.ChunkID, Text: clean.Text(h.ChunkText), Heading: h.Heading,
			Source: h.SourceName, Document: h.DocumentTitle, Score: h.Scores.Total})
	}
	return out, nil
}
