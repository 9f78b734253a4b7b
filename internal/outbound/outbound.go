// Package outbound posts JSON to the external tools the engine plugins drive (agent graph runner,
// automation tool, chatflow tool, generators) and reads their answers with a size cap. Tool is the
// part of an engine's Options that says where its tool is and how to reach it, with the tool check
// of the engine's Health.
package outbound

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// MaxAnswer caps how much of an answer body is read.
const MaxAnswer = 4 << 20

// Answer is what a tool answered.
type Answer struct {
	Status      int
	Body        []byte
	ContentType string
}

// HTML reports an HTML page: a web UI answered, not the tool's API (its address lacks the API's
// path). The body must be markup: Express sends a plain string ("pong") as text/html too.
func (a *Answer) HTML() bool {
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(a.ContentType)), "text/html") &&
		strings.HasPrefix(strings.TrimSpace(string(a.Body)), "<")
}

// OK reports a 2xx status.
func (a *Answer) OK() bool { return a.Status >= 200 && a.Status < 300 }

// Brief is a short, log-safe description of the answer: the status and the start of the body.
func (a *Answer) Brief() string {
	b := strings.TrimSpace(string(a.Body))
	if len(b) > 200 {
		b = b[:200] + "..."
	}
	if b == "" {
		return fmt.Sprintf("status %d", a.Status)
	}
	return fmt.Sprintf("status %d: %s", a.Status, b)
}

// PostJSON posts body as JSON to url and reads the answer. A timeout > 0 bounds the whole exchange
// on top of ctx. A non-2xx answer is not an error: check Answer.OK. An error means the tool could not
// be reached or did not answer in time.
func PostJSON(ctx context.Context, client *http.Client, url string, body any, timeout time.Duration) (*Answer, error) {
	return Post(ctx, client, url, body, timeout, nil)
}

// Post is PostJSON with header's fields added to the request (a tool's Authorization).
func Post(ctx context.Context, client *http.Client, url string, body any, timeout time.Duration, header http.Header) (*Answer, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("outbound: encode body: %w", err)
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("outbound: request %s: %w", url, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "reelforge-engine/1")
	for k, v := range header {
		req.Header[k] = v
	}
	if client == nil {
		client = http.DefaultClient
	}
	res, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("outbound: post %s: %w", url, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, MaxAnswer))
	if err != nil {
		return nil, fmt.Errorf("outbound: read answer of %s: %w", url, err)
	}
	return &Answer{Status: res.StatusCode, Body: data, ContentType: res.Header.Get("Content-Type")}, nil
}

// Join joins a base URL and a path with exactly one slash between them.
func Join(base, path string) string {
	return strings.TrimRight(base, "/") + "/" + strings.TrimLeft(path, "/")
}

// Reachable reports whether the tool at url answers HTTP at all within timeout, with its answer to
// GET url (status, content type, the body's first 512 bytes); the error says why it did not answer. It is
// the tool check of the engines' Health (engine.CapToolHealth, Tool.Health), which judges the answer.
func Reachable(ctx context.Context, client *http.Client, url string, timeout time.Duration) (*Answer, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("outbound: request %s: %w", url, err)
	}
	req.Header.Set("User-Agent", "reelforge-engine/1")
	req.Close = true // a fresh connection each time: a kept-alive one says nothing of the listener
	if client == nil {
		client = http.DefaultClient
	}
	res, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("outbound: get %s: %w", url, err)
	}
	head, _ := io.ReadAll(io.LimitReader(res.Body, 512)) // enough to tell a page (HTML) from an API's answer
	res.Body.Close()
	return &Answer{Status: res.StatusCode, Body: head, ContentType: res.Header.Get("Content-Type")}, nil
}
