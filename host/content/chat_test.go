package content

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

type fakeKB struct{ hits []KBHit }

func (f fakeKB) SearchKB(context.Context, string, string, string, string, int) ([]KBHit, error) {
	return f.hits, nil
}

func TestChat(t *testing.T) {
	t.Parallel()
	var gotPath, gotQuestion string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b map[string]any
		_ = json.NewDecoder(r.Body).Decode(&b)
		gotPath, gotQuestion = r.URL.Path, b["question"].(string)
		_ = json.NewEncoder(w).Encode(map[string]any{"text": "Hooks matter [1]",
			"sourceDocuments": []any{map[string]any{"pageContent": "A hook is the first 3 seconds.", "metadata": map[string]any{"source": "guide.md"}}}})
	}))
	defer up.Close()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) }))
	defer down.Close()
	hits := []KBHit{{ChunkID: "c1", Text: "A good hook shows the payoff in the first three seconds.", Source: "kb"}}

	s := New(Config{Chatflow: NewChatflowClient(up.URL, "kb-id")})
	ans, err := s.Chat(context.Background(), ChatInput{Message: "What makes a good hook?", ChatflowType: "kb"})
	if err != nil || ans.Degraded || ans.Response != "Hooks matter [1]" || len(ans.Citations) != 1 || ans.Citations[0].Source != "guide.md" {
		t.Errorf("Chat(up) = %+v, %v", ans, err)
	}
	if gotPath != "/prediction/kb-id" || gotQuestion != "What makes a good hook?" {
		t.Errorf("chatflow called at %q with %q", gotPath, gotQuestion)
	}

	tests := map[string]struct {
		s        *Service
		wantCite bool
	}{
		"down, kb hits":    {New(Config{Chatflow: NewChatflowClient(down.URL, "kb-id"), KB: fakeKB{hits}}), true},
		"down, no kb":      {New(Config{Chatflow: NewChatflowClient(down.URL, "kb-id")}), false},
		"not configured":   {New(Config{KB: fakeKB{hits}}), true},
		"unreachable tool": {New(Config{Chatflow: NewChatflowClient("http://127.0.0.1:1", "kb-id")}), false},
	}
	for name, tc := range tests {
		ans, err := tc.s.Chat(context.Background(), ChatInput{Message: "What makes a good hook?", ChatflowType: "kb"})
		if err != nil || !ans.Degraded || strings.TrimSpace(ans.Response) == "" || ans.Citations == nil ||
			(len(ans.Citations) > 0) != tc.wantCite {
			t.Errorf("%s: Chat = %+v, %v", name, ans, err)
		}
	}
	if _, err := s.Chat(context.Background(), ChatInput{Message: "  "}); err == nil {
		t.Errorf("Chat(empty) succeeded")
	}
}
