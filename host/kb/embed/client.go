package embed

import (
	"context"
	"fmt"
	"time"

	"github.com/reelforge/reelforge/host/kb/httpjson"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// Client embeds through an OpenAI-compatible server: POST {BaseURL}/embeddings in batches.
type Client struct {
	api   httpjson.Client
	model string
	dims  int
	batch int
}

// ClientConfig configures NewClient.
type ClientConfig struct {
	BaseURL    string        // e.g. https://api.openai.com/v1
	APIKey     string        // optional
	Model      string        // e.g. text-embedding-3-small
	Dimensions int           // vector size the model returns; 0 means 1536
	BatchSize  int           // texts per request; 0 means 64
	Timeout    time.Duration // per request; 0 means 60 s
	Retries    int           // retries on 429, 5xx and transport errors; negative means 0, 0 means 3
}

// NewClient returns an OpenAI-compatible embedding client.
func NewClient(cfg ClientConfig) *Client {
	if cfg.Dimensions <= 0 {
		cfg.Dimensions = LocalDimensions
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 64
	}
	if cfg.Retries == 0 {
		cfg.Retries = 3
	} else if cfg.Retries < 0 {
		cfg.Retries = 0
	}
	return &Client{
		api:   httpjson.Client{BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, Timeout: cfg.Timeout, Retries: cfg.Retries},
		model: cfg.Model, dims: cfg.Dimensions, batch: cfg.BatchSize,
	}
}

// Model returns the configured model name.
func (c *Client) Model() string { return c.model }

// Dimensions returns the configured vector size.
func (c *Client) Dimensions() int { return c.dims }

// Semantic returns true: an embedding model's vectors carry meaning (see embed.Semantic).
func (c *Client) Semantic() bool { return true }

type embedRequest struct {
	Model string   `json:"model"`
	Input []string `json:"input"`
}

type embedResponse struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
}

// Embed returns one vector per text, in order. A wrong count or dimension is an
// EXTERNAL_SERVICE_ERROR.
func (c *Client) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	const op = "embed.Client.Embed"
	out := make([][]float32, len(texts))
	for lo := 0; lo < len(texts); lo += c.batch {
		hi := min(lo+c.batch, len(texts))
		var resp embedResponse
		if err := c.api.Post(ctx, op, "/embeddings", embedRequest{Model: c.model, Input: texts[lo:hi]}, &resp); err != nil {
			return nil, err
		}
		if len(resp.Data) != hi-lo {
			return nil, errcode.E(op, errcode.ExternalService,
				fmt.Sprintf("embedding service returned %d vectors for %d texts", len(resp.Data), hi-lo), nil)
		}
		for i, d := range resp.Data {
			idx := d.Index
			if idx < 0 || idx >= hi-lo {
				idx = i
			}
			if len(d.Embedding) != c.dims {
				return nil, errcode.E(op, errcode.ExternalService,
					fmt.Sprintf("embedding service returned %d dimensions, want %d", len(d.Embedding), c.dims), nil)
			}
			out[lo+idx] = d.Embedding
		}
	}
	for i := range out {
		if out[i] == nil {
			return nil, errcode.E(op, errcode.ExternalService, "embedding service skipped a text", nil)
		}
	}
	return out, nil
}
