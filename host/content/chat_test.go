package content

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reelforge/reelforge/internal/outbound"
	"github.com/reelforge/reelforge/plugins/chatflow"
)

type fakeKB struct{ hits []KBHit }

func (f fakeKB) SearchKB(context.Context, string, string, string, string, int) ([]KBHit, error) {
	return f.hits, nil
}

func TestChat(t *testing.T) {
	t.Parallel()
	var gotPath, gotQuestion string
	var gotOverride any
	// The tool's URL is its API base, not a Flowise root: GET {URL}/api/v1/ping finds nothing,
	// so predictions go to {URL}/prediction/{id} (chatflow's apiBase).
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		var b map[string]any
		_ = json.NewDecoder(r.Body).Decode(&b)
		q, _ := b["question"].(string)
		gotPath, gotQuestion, gotOverride = r.URL.Path, q, b["overrideConfig"]
		_ = json.NewEncoder(w).Encode(map[string]any{"text": "Hooks matter [1]",
			"sourceDocuments": []any{map[string]any{"pageContent": "A hook is the first 3 seconds.", "metadata": map[string]any{"source": "guide.md"}}}})
	}))
	defer up.Close()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) }))
	defer down.Close()
	hits := []KBHit{{ChunkID: "c1", Text: "A good hook shows the payoff in the first three seconds.", Source: "kb"}}
	tool := func(url string) chatflow.Options {
		return chatflow.Options{Tool: outbound.Tool{URL: url}, DefaultChatflowID: "kb-id", Retries: -1}
	}

	s := New(Config{Chatflow: tool(up.URL)})
	ans, err := s.Chat(context.Background(), ChatInput{Message: "What makes a good hook?", ChatflowType: "kb", ProjectID: "p1"})
	if err != nil || ans.Degraded || ans.Response != "Hooks matter [#1]" || len(ans.Citations) != 1 || ans.Citations[0].Source != "guide.md" {
		t.Errorf("Chat(up) = %+v, %v", ans, err)
	}
	if gotPath != "/prediction/kb-id" || gotQuestion != "What makes a good hook?" || gotOverride == nil {
		t.Errorf("chatflow called at %q with %q, override %v", gotPath, gotQuestion, gotOverride)
	}

	tests := map[string]struct {
		s        *Service
		typ      string
		wantCite bool
	}{
		"down, kb hits":    {New(Config{Chatflow: tool(down.URL), KB: fakeKB{hits}}), "kb", true},
		"down, no kb":      {New(Config{Chatflow: tool(down.URL)}), "kb", false},
		"not configured":   {New(Config{KB: fakeKB{hits}}), "kb", true},
		"unreachable tool": {New(Config{Chatflow: tool("http://127.0.0.1:1")}), "kb", false},
		"other type":       {New(Config{Chatflow: tool(up.URL), KB: fakeKB{hits}}), "script", true},
	}
	for name, tc := range tests {
		ans, err := tc.s.Chat(context.Background(), ChatInput{Message: "What makes a good hook?", ChatflowType: tc.typ})
		if err != nil || !ans.Degraded || strings.TrimSpace(ans.Response) == "" || ans.Citations == nil ||
			(len(ans.Citations) > 0) != tc.wantCite {
			t.Errorf("%s: Chat = %+v, %v", name, ans, err)
		}
	}
	if _, err := s.Chat(context.Background(), ChatInput{Message: "  "}); err == nil {
		t.Errorf("Chat(empty) succeeded")
	}
}

// /api/ai/chat carries its conversation to the chatflow tool and back (overrideConfig.sessionId and
// chatId), with the same vars as a chatflow run: the user and the project.
func TestChatSessionAndVars(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []map[string]any
	tool := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		var b map[string]any
		_ = json.NewDecoder(r.Body).Decode(&b)
		mu.Lock()
		got = append(got, b)
		mu.Unlock()
		sid, _ := b["chatId"].(string)
		if sid == "" {
			sid = "made-by-the-tool"
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"text": "ok", "chatId": sid, "sessionId": sid})
	}))
	defer tool.Close()
	s := New(Config{Chatflow: chatflow.Options{Tool: outbound.Tool{URL: tool.URL}, DefaultChatflowID: "kb-id", Retries: -1}})
	first, err := s.Chat(context.Background(), ChatInput{UserID: "u1", ProjectID: "p1", Message: "hi", ChatflowType: "kb"})
	if err != nil || first.SessionID != "made-by-the-tool" {
		t.Fatalf("first turn = %+v, %v; want the tool's session", first, err)
	}
	second, err := s.Chat(context.Background(), ChatInput{UserID: "u1", ProjectID: "p1", Message: "again", ChatflowType: "kb", SessionID: first.SessionID})
	if err != nil || second.SessionID != first.SessionID {
		t.Fatalf("second turn = %+v, %v; want the same session", second, err)
	}
	want := map[string]any{"question": "again", "chatId": "made-by-the-tool",
		"overrideConfig": map[string]any{"sessionId": "made-by-the-tool", "vars": map[string]any{"user_id": "u1", "project_id": "p1"}}}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 {
		t.Fatalf("the tool got %d predictions, want 2", len(got))
	}
	if diff := cmp.Diff(want, got[1]); diff != "" {
		t.Errorf("second prediction mismatch (-want +got):\n%s", diff)
	}
}
