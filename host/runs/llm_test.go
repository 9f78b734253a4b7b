package runs_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/reelforge/reelforge/host/kb/llm"
	"github.com/reelforge/reelforge/host/runs"
	"github.com/reelforge/reelforge/sdk/engine"
)

func TestGenerate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openStore(t)
	s := runs.New(runs.Deps{Store: st}, runs.Options{})
	res, err := s.Generate(ctx, &engine.GenerateRequest{Prompt: "hi"})
	if err != nil || res.OK {
		t.Errorf("Generate without a model = %+v, %v; want OK=false", res, err)
	}
	hits, err := s.Search(ctx, &engine.SearchRequest{Query: "x"})
	if err != nil || len(hits) != 0 {
		t.Errorf("Search without a knowledge base = %v, %v; want no hits", hits, err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Model    string        `json:"model"`
			Messages []llm.Message `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		if r.URL.Path != "/chat/completions" || body.Model != "m1" || len(body.Messages) != 2 {
			http.Error(w, "bad request", 400)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": "a script"}}}})
	}))
	defer srv.Close()
	s = runs.New(runs.Deps{Store: st, LLM: runs.ChatLLM{Client: llm.NewClient(llm.ClientConfig{BaseURL: srv.URL, Retries: -1}), Model: "m1"}},
		runs.Options{})
	res, err = s.Generate(ctx, &engine.GenerateRequest{System: "you write", Prompt: "hi"})
	if err != nil || !res.OK || res.Text != "a script" {
		t.Errorf("Generate = %+v, %v", res, err)
	}
}
