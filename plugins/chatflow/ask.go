package chatflow

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/reelforge/reelforge/internal/extract"
	"github.com/reelforge/reelforge/internal/outbound"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// NoBasis is the answer when the knowledge base holds nothing citable for the question.
const NoBasis = "No citable basis was found in the knowledge base for this question, so any answer would be uncertain."

// SearchFunc asks the knowledge base with the caller's visibility (the host's search, or
// engine.Host.Search bound to the run's user and project).
type SearchFunc func(ctx context.Context, query string, topK int) ([]engine.SearchHit, error)

// GenerateFunc asks a language model; OK=false in its answer means no model is configured.
type GenerateFunc func(ctx context.Context, req *engine.GenerateRequest) (*engine.GenerateResult, error)

// Citation is a cited source (SPEC.md: chunk_id, source, document, excerpt). Citation number n is
// the n-th entry.
type Citation struct {
	ChunkID  string `json:"chunk_id"`
	Source   string `json:"source"`
	Document string `json:"document"`
	Excerpt  string `json:"excerpt"`
}

// Answer is what Ask found.
type Answer struct {
	Text      string     `json:"answer"`
	Citations []Citation `json:"citations"`
	// Engine is "chatflow" when the tool answered, "template" for the local fallback.
	Engine string `json:"engine"`
	// Degraded says why the local fallback answered; empty when the tool did.
	Degraded string `json:"degraded,omitempty"`
	// TokensUsed and CostUSD are the fallback model's usage, when a model answered.
	TokensUsed int64   `json:"tokens_used,omitempty"`
	CostUSD    float64 `json:"cost_usd,omitempty"`
}

// Map is the answer as run outputs: {answer, citations, engine, degraded?}.
func (a *Answer) Map() map[string]any {
	cites := make([]any, 0, len(a.Citations))
	for _, c := range a.Citations {
		cites = append(cites, map[string]any{"chunk_id": c.ChunkID, "source": c.Source, "document": c.Document, "excerpt": c.Excerpt})
	}
	out := map[string]any{"answer": a.Text, "citations": cites, "engine": a.Engine}
	if a.Degraded != "" {
		out["degraded"] = a.Degraded
	}
	return out
}

// prediction is the chatflow tool's answer.
type prediction struct {
	Text            string `json:"text"`
	SourceDocuments []struct {
		PageContent string         `json:"pageContent"`
		Metadata    map[string]any `json:"metadata"`
	} `json:"sourceDocuments"`
}

// Ask answers question through the chatflow tool (POST {URL}/prediction/<chatflowID> with
// {question, overrideConfig?}). When the tool is not configured, is down, answers non-2xx after the
// retries, or answers without text, it answers from a local prompt template over search (the model
// of opts.GenerateFunc when one answers, else an extractive answer of the best sentences, each cited
// by number; NoBasis without hits) and reports degraded = true. The error is non-nil only when the
// question is empty (VALIDATION_ERROR), ctx ended, or the fallback itself failed (CHATFLOW_ERROR).
func Ask(ctx context.Context, opts Options, question, chatflowID string, search SearchFunc) (Answer, bool, error) {
	opts = opts.withDefaults()
	question = strings.TrimSpace(question)
	if question == "" {
		return Answer{}, false, errcode.Invalid("question", "is required")
	}
	reason := ""
	switch {
	case opts.URL == "":
		reason = "the chatflow tool is not configured (CHATFLOW_URL)"
	case chatflowID == "":
		reason = "no chatflow id is configured"
	default:
		a, err := predict(ctx, opts, question, chatflowID)
		if err == nil {
			a.Text = engine.NormalizeCitations(a.Text, len(a.Citations))
			return a, false, nil
		}
		if ctx.Err() != nil {
			return Answer{}, false, errcode.E("chatflow.Ask", errcode.WorkflowCancelled, "the question was cancelled", ctx.Err())
		}
		opts.Logger.Warn("chatflow tool failed; answering from the local template", "chatflow_id", chatflowID, "error", err)
		reason = "the chatflow tool is unavailable"
		if e := errcode.As(err); e != nil {
			reason += ": " + e.Message()
		}
	}
	a, err := fallback(ctx, opts, question, search)
	if err != nil {
		return Answer{}, true, err
	}
	a.Degraded = reason
	a.Text = engine.NormalizeCitations(a.Text, len(a.Citations))
	return a, true, nil
}

func predict(ctx context.Context, opts Options, question, chatflowID string) (Answer, error) {
	body := map[string]any{"question": question}
	if len(opts.OverrideConfig) > 0 {
		body["overrideConfig"] = opts.OverrideConfig
	}
	url := opts.URL + "/prediction/" + chatflowID
	var last error
	for attempt := 0; attempt <= opts.Retries; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return Answer{}, ctx.Err()
			case <-time.After(opts.RetryBackoff):
			}
		}
		ans, err := outbound.PostJSON(ctx, opts.HTTPClient, url, body, opts.Timeout)
		if err != nil {
			last = errcode.E("chatflow.predict", errcode.Chatflow, "the chatflow tool could not be reached", err)
			continue
		}
		if !ans.OK() {
			last = errcode.E("chatflow.predict", errcode.Chatflow, fmt.Sprintf("the chatflow tool answered %d", ans.Status), fmt.Errorf("%s", ans.Brief()))
			if ans.Status >= 400 && ans.Status < 500 && ans.Status != http.StatusTooManyRequests && ans.Status != http.StatusRequestTimeout {
				break // the request itself is refused: asking again will not help
			}
			continue
		}
		var p prediction
		if err := json.Unmarshal(ans.Body, &p); err != nil || strings.TrimSpace(p.Text) == "" {
			return Answer{}, errcode.E("chatflow.predict", errcode.Chatflow, "the chatflow tool answered without text", err)
		}
		a := Answer{Text: p.Text, Engine: Name, Citations: []Citation{}}
		for _, d := range p.SourceDocuments {
			a.Citations = append(a.Citations, Citation{
				ChunkID:  firstString(d.Metadata, "chunk_id", "chunkId", "id"),
				Source:   firstString(d.Metadata, "source", "source_name", "sourceName"),
				Document: firstString(d.Metadata, "document", "title", "filename", "source"),
				Excerpt:  excerpt(d.PageContent),
			})
		}
		return a, nil
	}
	return Answer{}, last
}

// fallback is the local prompt template over the knowledge base.
func fallback(ctx context.Context, opts Options, question string, search SearchFunc) (Answer, error) {
	a := Answer{Engine: "template", Citations: []Citation{}}
	if search == nil {
		a.Text = NoBasis
		return a, nil
	}
	hits, err := search(ctx, question, opts.TopK)
	if err != nil {
		if ctx.Err() != nil {
			return a, errcode.E("chatflow.fallback", errcode.WorkflowCancelled, "the question was cancelled", ctx.Err())
		}
		return a, errcode.E("chatflow.fallback", errcode.Chatflow, "the chatflow tool is down and the knowledge base could not be searched", err)
	}
	if len(hits) == 0 {
		a.Text = NoBasis
		return a, nil
	}
	for _, h := range hits {
		a.Citations = append(a.Citations, Citation{ChunkID: h.ChunkID, Source: h.SourceName, Document: h.Document, Excerpt: excerpt(h.ChunkText)})
	}
	if opts.GenerateFunc != nil {
		res, err := opts.GenerateFunc(ctx, &engine.GenerateRequest{System: systemPrompt, Prompt: prompt(question, hits), MaxTokens: 600})
		if err == nil && res != nil && res.OK && strings.TrimSpace(res.Text) != "" {
			a.Text, a.TokensUsed, a.CostUSD = strings.TrimSpace(res.Text), res.TokensUsed, res.CostUSD
			return a, nil
		}
		if err != nil {
			opts.Logger.Warn("fallback model failed; answering extractively", "error", err)
		}
	}
	a.Text = extractive(question, hits)
	return a, nil
}

const systemPrompt = "You answer questions for a short-video content team using only the numbered knowledge-base " +
	"fragments you are given. Cite every claim with its fragment number, like [#1]. If the fragments " +
	"do not contain the answer, say that no citable basis was found and that the answer is uncertain. Never add " +
	"facts that are not in the fragments."

func prompt(question string, hits []engine.SearchHit) string {
	var b strings.Builder
	b.WriteString("Fragments:\n")
	for i, h := range hits {
		fmt.Fprintf(&b, "[#%d] (%s) %s\n", i+1, h.SourceName, strings.TrimSpace(h.ChunkText))
	}
	b.WriteString("\nQuestion: ")
	b.WriteString(question)
	b.WriteString("\nAnswer with citations:")
	return b.String()
}

// extractive answers with the sentence of each of the first three hits that shares the most
// informative words with the question (extract.Best), each followed by its citation; with none, the
// knowledge base has no citable basis.
func extractive(question string, hits []engine.SearchHit) string {
	texts := make([]string, len(hits))
	for i, h := range hits {
		texts[i] = h.ChunkText
	}
	var parts []string
	for _, p := range extract.Best(question, texts, 3) {
		parts = append(parts, p.Sentence+" "+engine.CiteMarker(p.Index+1))
	}
	if len(parts) == 0 {
		return NoBasis
	}
	return "From the knowledge base: " + strings.Join(parts, " ")
}

func excerpt(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 300 {
		return string(r[:300]) + "…"
	}
	return s
}

func firstString(m map[string]any, keys ...string) string {
	for _, k := range keys {
		switch v := m[k].(type) {
		case string:
			if v != "" {
				return v
			}
		case float64:
			return fmt.Sprint(v)
		}
	}
	return ""
}
