// Package lgreplay records a LangGraph server's exchanges with the graph engine and replays them,
// so that tests cover the LangGraph Platform protocol (plugins/graph, RUNNER_PROTOCOL=langgraph)
// without npm: the exchanges in plugins/graph/testdata/langgraph were recorded from a stock
// `langgraphjs dev` (@langchain/langgraph-api 1.5.1) serving integrations/langgraph
// (TestRecordLangGraph in plugins/graph, with LANGGRAPH_RECORD_URL set).
//
// The thread id is derived from the Reelforge run's id (graph.ThreadID): a recording writes it as
// {thread_id} in paths, requests and answers, and the replay puts the thread of the request back,
// so the recorded exchanges serve any run.
package lgreplay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
)

// ThreadToken stands for the run's thread id in a recording.
const ThreadToken = "{thread_id}"

// Exchange is one request to the LangGraph server and its answer.
type Exchange struct {
	Method      string          `json:"method"`
	Path        string          `json:"path"` // with the query
	Request     json.RawMessage `json:"request,omitempty"`
	Status      int             `json:"status"`
	ContentType string          `json:"content_type"`
	Body        string          `json:"body"`
}

var threadPath = regexp.MustCompile(`^/threads/([0-9a-f-]{36})`)

// Recorder is an http.Handler that forwards every request to the server at Target and keeps the
// exchange, with thread written as ThreadToken.
type Recorder struct {
	Target string
	Thread string
	mu     sync.Mutex
	got    []Exchange
}

func (rec *Recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req, err := http.NewRequestWithContext(r.Context(), r.Method, rec.Target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.Header = r.Header.Clone()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer res.Body.Close()
	answer, _ := io.ReadAll(res.Body)
	hide := func(s string) string { return strings.ReplaceAll(s, rec.Thread, ThreadToken) }
	ex := Exchange{Method: r.Method, Path: hide(r.URL.RequestURI()), Status: res.StatusCode,
		ContentType: res.Header.Get("Content-Type"), Body: hide(string(answer))}
	if len(body) > 0 {
		ex.Request = json.RawMessage(hide(string(body)))
	}
	rec.mu.Lock()
	rec.got = append(rec.got, ex)
	rec.mu.Unlock()
	w.Header().Set("Content-Type", ex.ContentType)
	w.WriteHeader(res.StatusCode)
	_, _ = w.Write(answer)
}

// Save writes the exchanges recorded so far to path (indented JSON) and forgets them.
func (rec *Recorder) Save(path string) error {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	b, err := json.MarshalIndent(rec.got, "", "  ")
	if err != nil {
		return err
	}
	rec.got = nil
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Load reads the exchanges of a recording.
func Load(path string) ([]Exchange, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var exs []Exchange
	if err := json.Unmarshal(b, &exs); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return exs, nil
}

// Server is an http.Handler answering requests with recorded exchanges, in order: each request
// must be the next one recorded (method and path); the answer is the recorded one, the request's
// thread in place of ThreadToken. Requests made the answers a test compares (Requests). The health
// route, GET /ok, is answered at any time as the server does ({"ok":true}), outside the recording:
// a host checks it when it likes.
type Server struct {
	mu       sync.Mutex
	next     []Exchange
	requests []Exchange
	errs     []string
}

// NewServer serves the exchanges of the recordings, one after the other.
func NewServer(recordings ...[]Exchange) *Server {
	s := &Server{}
	for _, r := range recordings {
		s.next = append(s.next, r...)
	}
	return s
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.URL.Path == "/ok" {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true}`)
		return
	}
	body, _ := io.ReadAll(r.Body)
	thread := ""
	if m := threadPath.FindStringSubmatch(r.URL.Path); m != nil {
		thread = m[1]
	} else if r.Method == http.MethodPost && r.URL.Path == "/threads" {
		var b struct {
			ThreadID string `json:"thread_id"`
		}
		_ = json.Unmarshal(body, &b)
		thread = b.ThreadID
	}
	hide := func(s string) string {
		if thread == "" {
			return s
		}
		return strings.ReplaceAll(s, thread, ThreadToken)
	}
	s.mu.Lock()
	got := Exchange{Method: r.Method, Path: hide(r.URL.RequestURI())}
	if len(body) > 0 {
		got.Request = json.RawMessage(hide(string(body)))
	}
	s.requests = append(s.requests, got)
	if len(s.next) == 0 || s.next[0].Method != got.Method || s.next[0].Path != got.Path {
		want := "nothing more"
		if len(s.next) > 0 {
			want = s.next[0].Method + " " + s.next[0].Path
		}
		s.errs = append(s.errs, fmt.Sprintf("request %s %s, the recording has %s", got.Method, got.Path, want))
		s.mu.Unlock()
		http.Error(w, `{"detail":"not in the recording"}`, http.StatusNotImplemented)
		return
	}
	ex := s.next[0]
	s.next = s.next[1:]
	s.mu.Unlock()
	w.Header().Set("Content-Type", ex.ContentType)
	w.WriteHeader(ex.Status)
	_, _ = io.WriteString(w, strings.ReplaceAll(ex.Body, ThreadToken, thread))
}

// Requests are the requests served so far, the thread written as ThreadToken.
func (s *Server) Requests() []Exchange {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Exchange(nil), s.requests...)
}

// Problems are the requests that were not the next one recorded, and the recorded exchanges
// never asked for.
func (s *Server) Problems() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]string(nil), s.errs...)
	for _, ex := range s.next {
		out = append(out, fmt.Sprintf("recorded %s %s was never asked for", ex.Method, ex.Path))
	}
	return out
}
