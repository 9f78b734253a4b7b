package chatflow_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/reelforge/reelforge/internal/outbound"
	"github.com/reelforge/reelforge/plugins/chatflow"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/enginetest"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// fakeTool answers predictions with status (and a prediction on 200), counting calls.
type fakeTool struct {
	status int
	calls  atomic.Int64
	last   atomic.Value // map[string]any: the last request body
	path   atomic.Value
}

func (f *fakeTool) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet { // a tool with its API at its root: its ping, no Flowise /api/v1
		if r.URL.Path != "/ping" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte("pong"))
		return
	}
	f.calls.Add(1)
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	f.last.Store(body)
	f.path.Store(r.URL.Path)
	w.WriteHeader(f.status)
	if f.status == http.StatusOK {
		_, _ = w.Write([]byte(`{"text":"Cold brew steeps 12 hours [1]","sourceDocuments":[
		  {"pageContent":"Cold brew steeps for 12 to 24 hours.","metadata":{"source":"coffee.md","chunk_id":"c-1"}}]}`))
	}
}

func startTool(t *testing.T, status int) (*fakeTool, string) {
	t.Helper()
	f := &fakeTool{status: status}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func downURL(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	return srv.URL
}

var hits = []engine.SearchHit{
	{ChunkID: "c-1", SourceName: "coffee", Document: "coffee.md", ChunkText: "Espresso is pressed fast. Cold brew steeps for twelve hours in cold water."},
	{ChunkID: "c-2", SourceName: "coffee", Document: "tea.md", ChunkText: "Green tea wants water at 80 degrees."},
}

func searchHits(hs []engine.SearchHit) chatflow.SearchFunc {
	return func(context.Context, string, int) ([]engine.SearchHit, error) { return hs, nil }
}

func TestAskThroughTheTool(t *testing.T) {
	t.Parallel()
	tool, url := startTool(t, http.StatusOK)
	opts := chatflow.Options{Tool: outbound.Tool{URL: url + "/"}, OverrideConfig: map[string]any{"topK": 5}}
	a, degraded, err := chatflow.Ask(t.Context(), opts, chatflow.Question{Text: "How long does cold brew steep?", ChatflowID: "kb-chat"}, searchHits(hits))
	if err != nil || degraded {
		t.Fatalf("Ask() degraded = %v, error = %v; want the tool's answer", degraded, err)
	}
	want := chatflow.Answer{Text: "Cold brew steeps 12 hours [#1]", Engine: "chatflow",
		Citations: []chatflow.Citation{{ChunkID: "c-1", Source: "coffee.md", Document: "coffee.md", Excerpt: "Cold brew steeps for 12 to 24 hours."}}}
	if diff := cmp.Diff(want, a); diff != "" {
		t.Errorf("Ask() mismatch (-want +got):\n%s", diff)
	}
	if p := tool.path.Load(); p != "/prediction/kb-chat" {
		t.Errorf("tool called at %v", p)
	}
	wantBody := map[string]any{"question": "How long does cold brew steep?", "overrideConfig": map[string]any{"topK": float64(5)}}
	if diff := cmp.Diff(wantBody, tool.last.Load()); diff != "" {
		t.Errorf("prediction body mismatch (-want +got):\n%s", diff)
	}
}

func TestAskDegrades(t *testing.T) {
	t.Parallel()
	_, url503 := startTool(t, http.StatusServiceUnavailable)
	_, url400 := startTool(t, http.StatusBadRequest)
	tests := map[string]struct {
		url, id string
		hits    []engine.SearchHit
		want    string
		cites   int
	}{
		"down":           {url: downURL(t), id: "kb", hits: hits, want: "Cold brew steeps for twelve hours in cold water. [#1]", cites: 2},
		"answers 503":    {url: url503, id: "kb", hits: hits, want: "[#1]", cites: 2},
		"answers 400":    {url: url400, id: "kb", hits: hits, want: "[#1]", cites: 2},
		"not configured": {url: "", id: "kb", hits: hits, want: "[#1]", cites: 2},
		"no chatflow id": {url: url503, id: "", hits: hits, want: "[#1]", cites: 2},
		"no hits":        {url: url503, id: "kb", hits: nil, want: chatflow.NoBasis, cites: 0},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			opts := chatflow.Options{Tool: outbound.Tool{URL: tt.url}, RetryBackoff: time.Millisecond}
			a, degraded, err := chatflow.Ask(t.Context(), opts, chatflow.Question{Text: "How long does cold brew steep?", ChatflowID: tt.id}, searchHits(tt.hits))
			if err != nil || !degraded {
				t.Fatalf("Ask() degraded = %v, error = %v; want a degraded answer", degraded, err)
			}
			if !strings.Contains(a.Text, tt.want) || len(a.Citations) != tt.cites || a.Engine != "template" || a.Degraded == "" {
				t.Errorf("Ask() = %+v, want text with %q and %d citations", a, tt.want, tt.cites)
			}
		})
	}
}

func TestAskRetries(t *testing.T) {
	t.Parallel()
	tool503, url503 := startTool(t, http.StatusServiceUnavailable)
	tool400, url400 := startTool(t, http.StatusBadRequest)
	for _, c := range []struct {
		tool *fakeTool
		url  string
		want int64
	}{{tool503, url503, 3}, {tool400, url400, 1}} {
		_, _, _ = chatflow.Ask(t.Context(), chatflow.Options{Tool: outbound.Tool{URL: c.url}, RetryBackoff: time.Millisecond}, chatflow.Question{Text: "q", ChatflowID: "kb"}, nil)
		if got := c.tool.calls.Load(); got != c.want {
			t.Errorf("tool answering %d called %d times, want %d", c.tool.status, got, c.want)
		}
	}
}

func TestAskFallbackUsesTheModel(t *testing.T) {
	t.Parallel()
	var prompt string // Ask calls gen synchronously
	gen := func(_ context.Context, req *engine.GenerateRequest) (*engine.GenerateResult, error) {
		prompt = req.Prompt
		return &engine.GenerateResult{OK: true, Text: "Twelve hours [1].", TokensUsed: 40}, nil
	}
	a, degraded, err := chatflow.Ask(t.Context(), chatflow.Options{GenerateFunc: gen}, chatflow.Question{Text: "cold brew?", ChatflowID: "kb"}, searchHits(hits))
	if err != nil || !degraded || a.Text != "Twelve hours [#1]." || a.TokensUsed != 40 {
		t.Fatalf("Ask() = %+v, %v, %v", a, degraded, err)
	}
	if !strings.Contains(prompt, "[#1] (coffee) Espresso") || !strings.Contains(prompt, "[#2] (coffee) Green tea") {
		t.Errorf("prompt = %q, want numbered fragments", prompt)
	}
}

func TestAskErrors(t *testing.T) {
	t.Parallel()
	if _, _, err := chatflow.Ask(t.Context(), chatflow.Options{}, chatflow.Question{Text: "  ", ChatflowID: "kb"}, nil); errcode.Of(err) != errcode.Validation {
		t.Errorf("Ask(empty) error = %v, want VALIDATION_ERROR", err)
	}
	broken := func(context.Context, string, int) ([]engine.SearchHit, error) { return nil, io.ErrUnexpectedEOF }
	if _, _, err := chatflow.Ask(t.Context(), chatflow.Options{}, chatflow.Question{Text: "q", ChatflowID: "kb"}, broken); errcode.Of(err) != errcode.Chatflow {
		t.Errorf("Ask(tool and search down) error = %v, want CHATFLOW_ERROR", err)
	}
}

func TestConformance(t *testing.T) {
	_, url := startTool(t, http.StatusOK)
	enginetest.Conformance(t, func() engine.Engine {
		return chatflow.New(chatflow.Options{Tool: outbound.Tool{URL: url}, DefaultChatflowID: "kb"})
	})
}

func TestRun(t *testing.T) {
	t.Parallel()
	_, up := startTool(t, http.StatusOK)
	tests := map[string]struct {
		url          string
		wantEngine   string
		wantDegraded bool
	}{
		"tool up":   {url: up, wantEngine: "chatflow"},
		"tool down": {url: downURL(t), wantEngine: "template", wantDegraded: true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			eng, host := enginetest.New(t, chatflow.New(chatflow.Options{Tool: outbound.Tool{URL: tt.url}, RetryBackoff: time.Millisecond}))
			var last atomic.Pointer[engine.SearchRequest]
			host.SearchFunc = func(_ context.Context, req *engine.SearchRequest) ([]engine.SearchHit, error) {
				last.Store(req)
				return hits, nil
			}
			req := &engine.RunRequest{RunID: "run-1", Workflow: engine.Workflow{ID: "kb_chat", Settings: json.RawMessage(`{"chatflow_id":"kb-chat"}`)},
				Inputs: map[string]any{"topic": "cold brew"}, User: engine.UserContext{UserID: "u-1"}, Project: engine.ProjectContext{ProjectID: "p-1"}}
			res, err := eng.Run(t.Context(), nil, req)
			if err != nil || res.Status != engine.StatusCompleted {
				t.Fatalf("Run() = %+v, %v; want completed", res, err)
			}
			if res.Outputs["engine"] != tt.wantEngine || (res.Outputs["degraded"] != nil) != tt.wantDegraded {
				t.Errorf("outputs = %+v, want engine %s, degraded %v", res.Outputs, tt.wantEngine, tt.wantDegraded)
			}
			if c, _ := res.Outputs["citations"].([]any); len(c) == 0 {
				t.Errorf("outputs carry no citations: %+v", res.Outputs)
			}
			steps := host.Steps()
			if len(steps) != 1 || (steps[0].Degraded != "") != tt.wantDegraded || steps[0].Engine != "chatflow" {
				t.Errorf("steps = %+v", steps)
			}
			searched := last.Load()
			if tt.wantDegraded && (searched == nil || searched.UserID != "u-1" || searched.ProjectID != "p-1" || searched.Query != "cold brew" || !searched.Ground) {
				t.Errorf("search request = %+v, want the run's user, project and question, grounded by the host", searched)
			}
		})
	}
}

func TestRunWithoutQuestion(t *testing.T) {
	t.Parallel()
	eng, _ := enginetest.New(t, chatflow.New(chatflow.Options{}))
	_, err := eng.Run(t.Context(), nil, &engine.RunRequest{RunID: "run-1", Inputs: map[string]any{}})
	if errcode.Of(err) != errcode.Validation {
		t.Errorf("Run() error = %v, want VALIDATION_ERROR", err)
	}
}
