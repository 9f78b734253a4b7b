package node_test

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
	"github.com/reelforge/reelforge/host/runs"
	"github.com/reelforge/reelforge/sdk/engine"
)

// modelServer is a local OpenAI-compatible chat server. answer decides each reply from the
// prompt (system and user messages joined): a status other than 200 answers an error, a delay
// longer than the client's timeout is a slow model. Every prompt is recorded.
type modelServer struct {
	*httptest.Server
	mu      sync.Mutex
	prompts []string
}

type reply struct {
	status int
	text   string
	delay  time.Duration
}

func newModelServer(t *testing.T, answer func(prompt string) reply) *modelServer {
	m := &modelServer{}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/chat/completions" || r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Role, Content string
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model == "" || len(req.Messages) == 0 {
			http.Error(w, `{"error": {"message": "bad request"}}`, http.StatusBadRequest)
			return
		}
		var parts []string
		for _, msg := range req.Messages {
			parts = append(parts, msg.Content)
		}
		prompt := strings.Join(parts, "\n")
		m.mu.Lock()
		m.prompts = append(m.prompts, prompt)
		m.mu.Unlock()
		rep := answer(prompt)
		if rep.delay > 0 {
			select {
			case <-time.After(rep.delay):
			case <-r.Context().Done():
				return
			}
		}
		if rep.status != 0 && rep.status != http.StatusOK {
			w.WriteHeader(rep.status)
			_, _ = w.Write([]byte(`{"error": {"message": "model overloaded"}}`))
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": rep.text}}},
			"usage": map[string]any{"prompt_tokens": 50, "completion_tokens": 20, "total_tokens": 70},
		})
	}))
	t.Cleanup(m.Close)
	return m
}

// host is a fakeHost whose Generate is the host's own model adapter (runs.ChatLLM) over m, and
// whose knowledge base holds one passage.
func (m *modelServer) host() *fakeHost {
	chat := runs.ChatLLM{Client: llm.NewClient(llm.ClientConfig{BaseURL: m.URL, Timeout: 200 * time.Millisecond, Retries: -1}), Model: "test-model"}
	return &fakeHost{
		GenerateFunc: chat.Generate,
		SearchFunc: func(ctx context.Context, req *engine.SearchRequest) ([]engine.SearchHit, error) {
			return []engine.SearchHit{{ChunkID: "c1", ChunkText: "Press extra-firm tofu for ten minutes. A block costs 2.40 dollars.",
				SourceName: "cooking", Document: "tofu.md"}}, nil
		},
	}
}

func (m *modelServer) prompt(t *testing.T, marker string) string {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range m.prompts {
		if strings.Contains(p, marker) {
			return p
		}
	}
	t.Fatalf("no prompt holds %q among %d prompts", marker, len(m.prompts))
	return ""
}

func wantAll(t *testing.T, what, text string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(text, p) {
			t.Errorf("%s lacks %q:\n%s", what, p, text)
		}
	}
}

func TestEveryTextStepAsksTheModel(t *testing.T) {
	t.Parallel()
	m := newModelServer(t, func(prompt string) reply {
		switch {
		case strings.Contains(prompt, "Question:"):
			return reply{text: "Press it for ten minutes [1]."}
		case strings.Contains(prompt, "Rewrite"), strings.Contains(prompt, "Turn this content"):
			return reply{text: "REWRITTEN script about tofu."}
		}
		return reply{text: "MODEL script: press the tofu, it costs 2.40 dollars."}
	})

	// A voiceover: knowledge lookup, script, polish.
	h := m.host()
	req := request(step("lookup", "kb_lookup", ""), step("write", "script_writer", `{"format":"voiceover"}`, "lookup"),
		step("polish", "rewriter", `{"style":"energetic"}`, "write"))
	req.Inputs = map[string]any{"topic": "quick vegan dinners", "platform": "douyin", "style": "casual", "language": "zh", "duration": 20,
		engine.InputMediaDescriptions: []any{map[string]any{"ref": "a1", "name": "tofu.jpg", "description": "Pressed tofu browning in a cast-iron pan."}}}
	res := run(t, newEngine(), h, req)
	if res.Status != engine.StatusCompleted || res.Outputs["script"] != "REWRITTEN script about tofu." || res.Outputs["source"] != "model" {
		t.Fatalf("voiceover outputs = %v", res.Outputs)
	}
	wantAll(t, "script prompt", m.prompt(t, "Write a voiceover script"), "quick vegan dinners", "douyin", "casual",
		"Chinese", "about 80 Chinese characters", "[#1] (tofu.md) Press extra-firm tofu for ten minutes.", "2.40 dollars",
		"- tofu.jpg: Pressed tofu browning in a cast-iron pan.")
	wantAll(t, "polish prompt", m.prompt(t, "Rewrite this short-video script"), "energetic", "douyin",
		"MODEL script: press the tofu", "[#1] (tofu.md)")
	if st := h.final()["write"]; st.TokensUsed == nil || st.Outputs["source"] != "model" || st.Outputs["model"] != "test-model" {
		t.Errorf("write trace = %+v", st)
	}

	// A review: the reviewer's notes reach the revision.
	req = request(step("write", "script_writer", ""), step("review", "human_input", "", "write"), step("revise", "rewriter", "", "write", "review"))
	req.Completed = map[string]json.RawMessage{"write": mustJSON(t, map[string]any{"script": "Draft about tofu.", "source": "model"})}
	req.ResumeInput = map[string]any{"approved": false, "notes": "make it shorter and mention it costs under 3 dollars"}
	res = run(t, newEngine(), m.host(), req)
	if res.Outputs["notes_applied"] != true || res.Outputs["source"] != "model" {
		t.Errorf("revise outputs = %v", res.Outputs)
	}
	wantAll(t, "revision prompt", m.prompt(t, "Draft about tofu."), "Apply the reviewer's notes: make it shorter and mention it costs under 3 dollars")

	// Repurposing, a plan and a drama.
	req = request(step("repurpose", "rewriter", ""))
	req.Inputs = map[string]any{"content": "We tested five pans; cast iron held heat best.", "platform": "bilibili"}
	run(t, newEngine(), m.host(), req)
	wantAll(t, "repurpose prompt", m.prompt(t, "Turn this content"), "We tested five pans; cast iron held heat best.", "bilibili")
	req = request(step("lookup", "kb_lookup", ""), step("plan", "script_writer", `{"format":"plan"}`, "lookup"))
	req.Inputs = map[string]any{"topic": "tofu week", "days": 5}
	run(t, newEngine(), m.host(), req)
	wantAll(t, "plan prompt", m.prompt(t, "content plan of 5 posts"), "tofu week", "[#1] (tofu.md)")
	req = request(step("drama", "script_writer", `{"format":"drama"}`))
	req.Inputs = map[string]any{"topic": "a lost cat", "characters": "Mia, Leo", "duration": 40}
	run(t, newEngine(), m.host(), req)
	wantAll(t, "drama prompt", m.prompt(t, "short drama episode"), "a lost cat", "Characters: Mia, Leo", "about 100 words")

	// An answer: numbered fragments, and the model's marker in the one format.
	req = request(step("lookup", "kb_lookup", ""), step("reply", "answer", "", "lookup"))
	req.Inputs = map[string]any{"question": "How long do I press tofu?"}
	res = run(t, newEngine(), m.host(), req)
	wantAll(t, "answer prompt", m.prompt(t, "Question: How long do I press tofu?"), "[#1] Press extra-firm tofu")
	if res.Outputs["answer"] != "Press it for ten minutes [#1]." {
		t.Errorf("answer = %v, want the model's answer with [#1]", res.Outputs["answer"])
	}
}

func TestModelTroubleFallsBackToTemplate(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		rep  reply
		want string
	}{
		"error":   {reply{status: http.StatusInternalServerError}, "language model failed"},
		"slow":    {reply{text: "too late", delay: 5 * time.Second}, "language model failed"},
		"refusal": {reply{text: "I'm sorry, but I can't help with that request."}, "language model refused"},
		"empty":   {reply{text: ""}, "empty answer"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m := newModelServer(t, func(string) reply { return tt.rep })
			h := m.host()
			req := request(step("lookup", "kb_lookup", ""), step("write", "script_writer", `{"format":"video"}`, "lookup"),
				step("polish", "rewriter", "", "write"))
			res := run(t, newEngine(), h, req)
			if res.Status != engine.StatusCompleted {
				t.Fatalf("Run() = %+v", res.Error)
			}
			for _, id := range []string{"write", "polish"} {
				st := h.final()[id]
				note, _ := st.Outputs["note"].(string)
				if st.Outputs["source"] != "template" || !strings.Contains(note, tt.want) || !strings.Contains(note, "template output") {
					t.Errorf("%s trace outputs = %v, want a template with %q", id, st.Outputs, tt.want)
				}
			}
			if s, _ := res.Outputs["script"].(string); !strings.Contains(s, "[Hook]") {
				t.Errorf("script = %q, want the template's", s)
			}
		})
	}
}
