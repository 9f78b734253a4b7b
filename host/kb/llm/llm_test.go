package llm

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
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
