package content

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reelforge/reelforge/host/kb/llm"
)

// chatModel is a local OpenAI-compatible chat server answering every prompt with answer (status 0
// or 200: a completion; another status: an error). It records the prompts.
func chatModel(t *testing.T, status int, answer string) (*llm.Client, func() []string) {
	var mu sync.Mutex
	var prompts []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []llm.Message `json:"messages"`
		}
		if r.URL.Path != "/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		var parts []string
		for _, m := range req.Messages {
			parts = append(parts, m.Content)
		}
		mu.Lock()
		prompts = append(prompts, strings.Join(parts, "\n"))
		mu.Unlock()
		if status != 0 && status != http.StatusOK {
			w.WriteHeader(status)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": answer}}}})
	}))
	t.Cleanup(srv.Close)
	return llm.NewClient(llm.ClientConfig{BaseURL: srv.URL, Timeout: 2 * time.Second, Retries: -1}), func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), prompts...)
	}
}

func TestDiagnosisAndRewriteAskTheModel(t *testing.T) {
	t.Parallel()
	answers := []Answer{{Question: "What is your channel about?", Answer: "I run a cooking channel about quick vegan dinners"},
		{Question: "How often?", Answer: "每周能更新3次"}}
	report := `{"summary": "Vegan dinners for students", "niche": "quick vegan dinners", "audience": "students", "positioning": "p",
		"goal": "grow", "content_pillars": [{"name": "Recipes", "description": "d", "workflow_id": "video"}], "recommendations": ["r"]}`
	c, prompts := chatModel(t, 200, "```json\n"+report+"\n```")
	s := New(Config{LLM: c, Model: "m"})
	rep, _, err := s.Diagnose(context.Background(), answers, nil)
	if err != nil || rep.Source != "model" || rep.Note != "" || rep.Niche != "quick vegan dinners" || rep.Cadence.PostsPerWeek != 3 {
		t.Errorf("Diagnose = %+v, %v; want the model's report with the cadence read from the answers", rep, err)
	}
	if p := strings.Join(prompts(), "\n"); !strings.Contains(p, "I run a cooking channel about quick vegan dinners") || !strings.Contains(p, "每周能更新3次") {
		t.Errorf("diagnosis prompt lacks the answers:\n%s", p)
	}

	c, _ = chatModel(t, http.StatusBadGateway, "")
	s = New(Config{LLM: c, Model: "m"})
	rep, _, err = s.Diagnose(context.Background(), answers, nil)
	if err != nil || rep.Source != "template" || !strings.Contains(rep.Note, "language model failed") {
		t.Errorf("Diagnose with a failing model = %+v, %v; want the template saying why", rep, err)
	}

	c, prompts = chatModel(t, 200, "Rewritten with jokes.")
	s = New(Config{LLM: c, Model: "m"})
	rw, err := s.Rewrite(context.Background(), "Press the tofu for ten minutes.", "humorous")
	if err != nil || rw.Script != "Rewritten with jokes." || rw.Source != "model" {
		t.Errorf("Rewrite = %+v %v", rw, err)
	}
	if p := strings.Join(prompts(), "\n"); !strings.Contains(p, "Press the tofu for ten minutes.") || !strings.Contains(p, "humorous") {
		t.Errorf("rewrite prompt lacks the script or the style:\n%s", p)
	}

	c, _ = chatModel(t, 200, "I'm sorry, but I can't help with that.")
	s = New(Config{LLM: c, Model: "m"})
	if rw, err := s.Rewrite(context.Background(), "Press the tofu for ten minutes.", "humorous"); err != nil || rw.Source != "template" {
		t.Errorf("Rewrite with a refusing model = %+v %v, want the template", rw, err)
	}
}
