// Package flowisetest reads the exchanges recorded from a stock Flowise 3.1.4 by
// scripts/e2e-flowise.sh (FLOWISE_E2E_RECORD, plugins/chatflow/testdata/flowise/exchanges.json),
// for the tests that replay them: the chatflow engine's own and the host's run through it.
package flowisetest

import (
	"encoding/json"
	"net/http"
	"os"
	"testing"
)

// Exchange is one recorded request and Flowise's answer to it. The API key and the run's tool
// credential are recorded as placeholders.
type Exchange struct {
	Request struct {
		Method        string         `json:"method"`
		Path          string         `json:"path"`
		Authorization string         `json:"authorization"`
		Body          map[string]any `json:"body"`
	} `json:"request"`
	Response struct {
		Status      int             `json:"status"`
		ContentType string          `json:"content_type"`
		Body        json.RawMessage `json:"body"`
	} `json:"response"`
}

// Load reads the exchanges recorded at path.
func Load(t testing.TB, path string) []Exchange {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []Exchange
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return out
}

// Asks is whether a request of method and path, whose JSON body is body, asks what e recorded:
// the same question in the same conversation (chatId).
func (e Exchange) Asks(method, path string, body map[string]any) bool {
	q := e.Request
	return q.Method == method && q.Path == path && q.Body["question"] == body["question"] && q.Body["chatId"] == body["chatId"]
}

// Answer writes Flowise's recorded answer. A text answer ("pong", a page) is recorded as a JSON
// string and written as its text.
func (e Exchange) Answer(w http.ResponseWriter) {
	w.Header().Set("Content-Type", e.Response.ContentType)
	w.WriteHeader(e.Response.Status)
	var text string
	if json.Unmarshal(e.Response.Body, &text) == nil {
		_, _ = w.Write([]byte(text))
	} else {
		_, _ = w.Write(e.Response.Body)
	}
}
