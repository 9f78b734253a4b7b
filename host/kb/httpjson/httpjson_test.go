package httpjson

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reelforge/reelforge/sdk/errcode"
)

func TestRetries(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer k" {
			t.Errorf("auth header %q", r.Header.Get("Authorization"))
		}
		switch calls.Add(1) {
		case 1:
			w.WriteHeader(429)
		case 2:
			w.WriteHeader(503)
		default:
			w.Write([]byte(`{"ok":true}`))
		}
	}))
	defer srv.Close()
	c := &Client{BaseURL: srv.URL + "/", APIKey: "k", Retries: 3, Backoff: time.Millisecond}
	var out struct{ OK bool }
	if err := c.Post(context.Background(), "t", "/x", map[string]int{"a": 1}, &out); err != nil || !out.OK {
		t.Fatalf("err %v out %+v", err, out)
	}
	if calls.Load() != 3 {
		t.Fatalf("%d calls", calls.Load())
	}
}

func TestNoRetryOn400(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(400)
	}))
	defer srv.Close()
	c := &Client{BaseURL: srv.URL, Retries: 3, Backoff: time.Millisecond}
	err := c.Post(context.Background(), "t", "/x", nil, &struct{}{})
	if !errcode.Is(err, errcode.ExternalService) || calls.Load() != 1 {
		t.Fatalf("err %v calls %d", err, calls.Load())
	}
}

func TestTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(2 * time.Second):
		}
	}))
	defer srv.Close()
	c := &Client{BaseURL: srv.URL, Timeout: 50 * time.Millisecond, Retries: 1, Backoff: time.Millisecond}
	start := time.Now()
	err := c.Post(context.Background(), "t", "/x", nil, &struct{}{})
	if !errcode.Is(err, errcode.ExternalService) || time.Since(start) > time.Second {
		t.Fatalf("err %v after %v", err, time.Since(start))
	}
}
