package llm

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestCheckCitations(t *testing.T) {
	clean, cited := CheckCitations("A [#1]. B [#7] and [#2][#1]. C [#0].", 3)
	if clean != "A [#1]. B and [#2][#1]. C ." || !reflect.DeepEqual(cited, []int{1, 2}) {
		t.Fatalf("%q %v", clean, cited)
	}
	if _, cited := CheckCitations("none", 3); len(cited) != 0 {
		t.Fatal(cited)
	}
}

func TestExtractive(t *testing.T) {
	frags := []string{
		"Our brand colour is teal. The logo needs clear space.",
		"Creators must not repost other people's videos. Reposting leads to a ban.",
		"短视频平台禁止搬运他人作品。违者封号。",
	}
	ans := Extractive{}.Answer("What happens if I repost videos?", frags)
	if !strings.Contains(ans, "repost other people's videos. [#2]") {
		t.Fatalf("answer %q", ans)
	}
	clean, cited := CheckCitations(ans, len(frags))
	if clean != ans || len(cited) == 0 {
		t.Fatalf("citations %q %v", clean, cited)
	}
	// Every sentence of the answer carries a citation.
	for _, part := range strings.SplitAfter(ans, "]") {
		if strings.TrimSpace(part) != "" && !strings.Contains(part, "[#") {
			t.Fatalf("uncited part %q", part)
		}
	}
	if ans := (Extractive{}).Answer("搬运会怎样", frags); !strings.Contains(ans, "[#3]") {
		t.Fatalf("Chinese answer %q", ans)
	}
	if (Extractive{}).Answer("x", nil) != "" {
		t.Fatal("no fragments")
	}
}

// A sentence the fragments hold more than once is quoted once, citing each fragment holding it; the
// repeat does not take the place of another sentence.
func TestExtractiveQuotesOnce(t *testing.T) {
	lamp := "The lighthouse lamp stands 12 metres above the rock."
	frags := []string{
		lamp + " The lamp is lit at dusk. " + lamp,
		"The lamp of the lighthouse was replaced in 1990. " + lamp,
	}
	ans := Extractive{}.Answer("how high does the lighthouse lamp stand", frags)
	if strings.Count(ans, lamp) != 1 || !strings.Contains(ans, lamp+" [#1] [#2]") {
		t.Fatalf("answer %q; want %q once, cited [#1] [#2]", ans, lamp)
	}
	if want := 3; strings.Count(ans, ".") != want {
		t.Fatalf("answer %q; want %d sentences", ans, want)
	}
}

func chatServer(t *testing.T, fail int32, reply string, delay time.Duration) *httptest.Server {
	var calls atomic.Int32
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			t.Errorf("path %s", r.URL.Path)
		}
		if calls.Add(1) <= fail {
			w.WriteHeader(429)
			return
		}
		var req chatRequest
		json.NewDecoder(r.Body).Decode(&req)
		if req.Model == "" || len(req.Messages) == 0 {
			t.Errorf("request %+v", req)
		}
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": Message{"assistant", reply}}}})
	}))
}

func TestChatRetries(t *testing.T) {
	srv := chatServer(t, 1, "hello [#1]", 0)
	defer srv.Close()
	c := NewClient(ClientConfig{BaseURL: srv.URL + "/v1"})
	c.api.Backoff = time.Millisecond
	got, err := c.Chat(context.Background(), "m", Prompt("q", []string{"f"}))
	if err != nil || got != "hello [#1]" {
		t.Fatalf("%q %v", got, err)
	}
}

func TestRerank(t *testing.T) {
	srv := chatServer(t, 0, "3, 1", 0)
	defer srv.Close()
	c := NewClient(ClientConfig{BaseURL: srv.URL + "/v1"})
	order, err := Rerank(context.Background(), c, "m", "q", []string{"a", "b", "c"}, time.Second)
	if err != nil || !reflect.DeepEqual(order, []int{2, 0, 1}) {
		t.Fatalf("%v %v", order, err)
	}
	slow := chatServer(t, 0, "1", time.Second)
	defer slow.Close()
	c = NewClient(ClientConfig{BaseURL: slow.URL + "/v1", Retries: -1})
	if _, err := Rerank(context.Background(), c, "m", "q", []string{"a"}, 50*time.Millisecond); err == nil {
		t.Fatal("want timeout error")
	}
}

// Chinese numerals are numbers: a note saying 四十五分钟 answers 多长时间 as one saying 45 minutes does.
func TestHoldsChineseNumerals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		question, text string
		want           bool
	}{
		{"这期视频拍摄需要多长时间？", "拍摄大约需要四十五分钟。", true},
		{"剪辑要多久？", "剪辑一般十五分钟就够了。", true},
		{"收费多少钱？", "每条广告两百元。", true},
		{"需要几天？", "通常两天半。", true},
		{"要多长时间？", "大约半小时。", true},
		{"要多长时间？", "我们在上海拍摄。", false},
		{"How long does it take?", "About 45 minutes.", true},
	}
	for _, tt := range tests {
		k := KindOf(tt.question)
		if k == KindNone {
			t.Fatalf("KindOf(%q) = none", tt.question)
		}
		if k == KindAmount || k == KindCount {
			k = KindNumber
		}
		if got := Holds(tt.text, k); got != tt.want {
			t.Errorf("Holds(%q, kind of %q) = %t, want %t", tt.text, tt.question, got, tt.want)
		}
	}
}
