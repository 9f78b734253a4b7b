package runs

import (
	"context"

	"github.com/reelforge/reelforge/host/kb/llm"
	"github.com/reelforge/reelforge/sdk/engine"
)

// ChatLLM answers Host.Generate with an OpenAI-compatible chat model (LLM_BASE_URL).
type ChatLLM struct {
	Client *llm.Client
	Model  string
}

// Generate implements LLM.
func (c ChatLLM) Generate(ctx context.Context, req *engine.GenerateRequest) (*engine.GenerateResult, error) {
	var msgs []llm.Message
	if req.System != "" {
		msgs = append(msgs, llm.Message{Role: "system", Content: req.System})
	}
	msgs = append(msgs, llm.Message{Role: "user", Content: req.Prompt})
	text, err := c.Client.Chat(ctx, c.Model, msgs)
	if err != nil {
		return nil, err
	}
	return &engine.GenerateResult{Text: text, OK: true, Model: c.Model}, nil
}
