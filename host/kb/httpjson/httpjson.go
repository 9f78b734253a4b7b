// Package httpjson posts JSON to OpenAI-compatible HTTP APIs with a timeout and retries.
//
// It is shared by the embedding and chat clients: 429 and 5xx answers and transport errors are
// retried with exponential back-off (honouring Retry-After), other answers fail at once. Every
// failure is an *errcode.Error with code EXTERNAL_SERVICE_ERROR whose public message names the
// service and status but never the API key or the response body.
package httpjson

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/reelforge/reelforge/sdk/errcode"
)

// Client calls one OpenAI-compatible server.
type Client struct {
	BaseURL string        // e.g. https://api.openai.com/v1; paths are appended
	APIKey  string        // sent as a Bearer token when not empty
	Timeout time.Duration // per attempt; 0 means 60 s
	Retries int           // extra attempts after the first on 429, 5xx and transport errors
	Backoff time.Duration // first back-off, doubled each retry; 0 means 500 ms
	HTTP    *http.Client  // nil means http.DefaultClient
}

// Post sends in as JSON to BaseURL+path and decodes the answer into out.
func (c *Client) Post(ctx context.Context, op, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return errcode.E(op, errcode.Unknown, "", err)
	}
	url := strings.TrimRight(c.BaseURL, "/") + path
	backoff := c.Backoff
	if backoff <= 0 {
		backoff = 500 * time.Millisecond
	}
	var last error
	for attempt := 0; attempt <= c.Retries; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return errcode.E(op, errcode.ExternalService, "request cancelled", ctx.Err())
			case <-time.After(backoff):
			}
			backoff *= 2
		}
		retry, wait, err := c.once(ctx, url, body, out)
		if err == nil {
			return nil
		}
		last = err
		if !retry || ctx.Err() != nil {
			break
		}
		if wait > backoff {
			backoff = wait
		}
	}
	if e := errcode.As(last); e != nil {
		e.Op = op
		return e
	}
	return errcode.E(op, errcode.ExternalService, "", last)
}

func (c *Client) once(ctx context.Context, url string, body []byte, out any) (retry bool, wait time.Duration, err error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return false, 0, errcode.E("", errcode.ExternalService, "bad service URL", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		msg := "service unreachable"
		if errors.Is(err, context.DeadlineExceeded) {
			msg = "service timed out"
		}
		return true, 0, errcode.E("", errcode.ExternalService, msg, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return true, 0, errcode.E("", errcode.ExternalService, "reading the answer failed", err)
	}
	if resp.StatusCode/100 != 2 {
		retry = resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500
		if s, e := strconv.Atoi(resp.Header.Get("Retry-After")); e == nil && s > 0 && s <= 60 {
			wait = time.Duration(s) * time.Second
		}
		snippet := string(data)
		if len(snippet) > 300 {
			snippet = snippet[:300]
		}
		return retry, wait, errcode.E("", errcode.ExternalService,
			fmt.Sprintf("service answered HTTP %d", resp.StatusCode), errors.New(snippet))
	}
	if err := json.Unmarshal(data, out); err != nil {
		return false, 0, errcode.E("", errcode.ExternalService, "service answered malformed JSON", err)
	}
	return false, 0, nil
}
