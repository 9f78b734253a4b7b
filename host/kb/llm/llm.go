// Package llm holds the knowledge base's language-model pieces: an OpenAI-compatible chat client,
// CheckCitations, and Rerank (the answerer that needs no model is internal/extract's Extractive).
package llm

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/reelforge/reelforge/host/kb/httpjson"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// Message is one chat message.
type Message struct {
	Role    string `json:"role"` // system, user or assistant
	Content string `json:"content"`
}

// Client is an OpenAI-compatible chat client: POST {BaseURL}/chat/completions.
type Client struct{ api httpjson.Client }

// ClientConfig configures NewClient.
type ClientConfig struct {
	BaseURL string
	APIKey  string
	Timeout time.Duration // per request; 0 means 60 s
	Retries int           // on 429, 5xx and transport errors; 0 means 2, negative means none
}

// NewClient returns a chat client.
func NewClient(cfg ClientConfig) *Client {
	if cfg.Retries == 0 {
		cfg.Retries = 2
	} else if cfg.Retries < 0 {
		cfg.Retries = 0
	}
	return &Client{api: httpjson.Client{BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, Timeout: cfg.Timeout, Retries: cfg.Retries}}
}

type chatRequest struct {
	Model       string    `json:"model"`
	Messages    []Message `json:"messages"`
	Temperature float64   `json:"temperature"`
}

type chatResponse struct {
	Choices []struct {
		Message Message `json:"message"`
	} `json:"choices"`
}

// Chat sends messages to model and returns the first choice's content.
func (c *Client) Chat(ctx context.Context, model string, msgs []Message) (string, error) {
	const op = "llm.Chat"
	var resp chatResponse
	if err := c.api.Post(ctx, op, "/chat/completions", chatRequest{Model: model, Messages: msgs}, &resp); err != nil {
		return "", err
	}
	if len(resp.Choices) == 0 {
		return "", errcode.E(op, errcode.ExternalService, "language model returned no choices", nil)
	}
	return resp.Choices[0].Message.Content, nil
}

// Prompt builds the ask prompt of SPEC.md rule 7: numbered fragments and the instruction to answer
// only from them, citing them as [#n].
func Prompt(query string, fragments []string) []Message {
	var b strings.Builder
	for i, f := range fragments {
		fmt.Fprintf(&b, "[#%d] %s\n\n", i+1, f)
	}
	return []Message{
		{Role: "system", Content: "Answer only from the numbered fragments. Cite every statement with the fragment number as [#n]. " +
			"If the fragments do not contain the answer, say that no citable basis was found. Answer in the language of the question."},
		{Role: "user", Content: "Fragments:\n\n" + b.String() + "Question: " + query},
	}
}

var citeRe = regexp.MustCompile(`\[#(\d+)\]`)

// CheckCitations removes citations [#k] with k outside 1..n and returns the cleaned answer and the
// distinct valid numbers cited, ascending. An answer left with none is uncited.
func CheckCitations(answer string, n int) (clean string, cited []int) {
	seen := map[int]bool{}
	clean = citeRe.ReplaceAllStringFunc(answer, func(m string) string {
		k, err := strconv.Atoi(m[2 : len(m)-1])
		if err != nil || k < 1 || k > n {
			return ""
		}
		seen[k] = true
		return m
	})
	for k := range seen {
		cited = append(cited, k)
	}
	sort.Ints(cited)
	return strings.TrimSpace(strings.Join(strings.Fields(clean), " ")), cited
}

// Rerank asks model to order docs by relevance to query and returns the permutation (indices into
// docs, best first; indices the model leaves out follow in their original order). On a timeout or
// an unusable answer it returns an error, and the caller keeps the hybrid order.
func Rerank(ctx context.Context, c *Client, model, query string, docs []string, timeout time.Duration) ([]int, error) {
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var b strings.Builder
	for i, d := range docs {
		if r := []rune(d); len(r) > 600 {
			d = string(r[:600])
		}
		fmt.Fprintf(&b, "[%d] %s\n\n", i+1, d)
	}
	ans, err := c.Chat(ctx, model, []Message{
		{Role: "system", Content: "Order the documents by relevance to the query. Answer only with their numbers, most relevant first, comma separated."},
		{Role: "user", Content: "Query: " + query + "\n\nDocuments:\n" + b.String()},
	})
	if err != nil {
		return nil, err
	}
	var order []int
	seen := map[int]bool{}
	for _, m := range regexp.MustCompile(`\d+`).FindAllString(ans, -1) {
		k, _ := strconv.Atoi(m)
		if k >= 1 && k <= len(docs) && !seen[k-1] {
			seen[k-1] = true
			order = append(order, k-1)
		}
	}
	if len(order) == 0 {
		return nil, errcode.E("llm.Rerank", errcode.ExternalService, "rerank answer had no document numbers", nil)
	}
	for i := range docs {
		if !seen[i] {
			order = append(order, i)
		}
	}
	return order, nil
}
