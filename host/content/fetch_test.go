package content

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

const page = `<html><head><title>Plain title</title>
<meta content="A description" property="og:description">
<meta property="og:title" content="OG title">
<meta property="og:image" content="/cover.png"></head><body>hi</body></html>`

func pageServer(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	if h == nil {
		h = func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write([]byte(page))
		}
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func TestFetchRefusesPrivateAddresses(t *testing.T) {
	t.Parallel()
	srv := pageServer(t, nil)
	redirect := pageServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	// The redirecting server is reached by the allowed host name localhost; its targets are not allowed.
	redirectURL := strings.Replace(redirect.URL, "127.0.0.1", "localhost", 1)
	tests := map[string]struct {
		allow []string
		url   string
	}{
		// The three; internal/netguard's own tests cover the rest of the address space.
		"loopback":            {nil, srv.URL},
		"metadata service":    {nil, "http://169.254.169.254/latest/meta-data/"},
		"redirect to private": {[]string{"localhost"}, redirectURL + "/?to=http://192.168.1.1/"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := NewFetcher(FetcherConfig{Allow: tc.allow, Timeout: 3 * time.Second})
			if _, err := f.Fetch(context.Background(), tc.url); !errors.Is(err, ErrRefused) {
				t.Errorf("Fetch(%q) = %v, want ErrRefused", tc.url, err)
			}
		})
	}
}

func TestFetchAllowedAndMetadata(t *testing.T) {
	t.Parallel()
	srv := pageServer(t, nil)
	for _, allow := range [][]string{{"127.0.0.1"}, {"127.0.0.0/8"}, {"localhost"}} {
		f := NewFetcher(FetcherConfig{Allow: allow})
		u := srv.URL
		if allow[0] == "localhost" {
			u = strings.Replace(u, "127.0.0.1", "localhost", 1)
		}
		p, err := f.Fetch(context.Background(), u+"/x")
		if err != nil {
			t.Fatalf("Fetch with allow %v = %v", allow, err)
		}
		if p.Title != "OG title" || p.Description != "A description" || !strings.HasSuffix(p.Image, "/cover.png") ||
			!strings.HasPrefix(p.Image, "http://") {
			t.Errorf("Fetch = %+v, want og metadata with an absolute image", p)
		}
	}
}

func TestFetchLimits(t *testing.T) {
	t.Parallel()
	slow := pageServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(3 * time.Second):
		case <-r.Context().Done():
		}
	})
	f := NewFetcher(FetcherConfig{Allow: []string{"127.0.0.1"}, Timeout: 200 * time.Millisecond})
	start := time.Now()
	if _, err := f.Fetch(context.Background(), slow.URL); err == nil || time.Since(start) > 2*time.Second {
		t.Errorf("Fetch(slow) = %v after %v, want a timeout within the limit", err, time.Since(start))
	}
	huge := pageServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<html><head>" + strings.Repeat("<meta name='x' content='y'>", 100000) + "<title>late</title></head></html>"))
	})
	f = NewFetcher(FetcherConfig{Allow: []string{"127.0.0.1"}, MaxBytes: 1 << 16})
	p, err := f.Fetch(context.Background(), huge.URL)
	if err != nil || p.Title != "" {
		t.Errorf("Fetch(huge) = %+v, %v; want the page cut at the cap (no late title)", p, err)
	}
	if _, err := f.Fetch(context.Background(), "file:///etc/passwd"); err == nil {
		t.Errorf("Fetch(file URL) succeeded")
	}
}

func TestDetectPlatform(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"https://www.douyin.com/video/7300000000000000000":      PlatformDouyin,
		"https://v.douyin.com/iRNBho6u/":                        PlatformDouyin,
		"https://www.iesdouyin.com/share/video/123":             PlatformDouyin,
		"https://www.xiaohongshu.com/explore/64f0a1b2000000001": PlatformXiaohongshu,
		"http://xhslink.com/a/AbCdEf":                           PlatformXiaohongshu,
		"https://weibo.com/1234567890/N1a2b3c4d":                PlatformWeibo,
		"https://m.weibo.cn/status/4900000000000000":            PlatformWeibo,
		"https://www.bilibili.com/video/BV1xx411c7mD":           PlatformBilibili,
		"https://b23.tv/AbCdEfG":                                PlatformBilibili,
		"https://example.com/douyin.com":                        PlatformWeb,
		"https://notdouyin.com/x":                               PlatformWeb,
		"not a url":                                             PlatformWeb,
	}
	for in, want := range tests {
		if got := DetectPlatform(in); got != want {
			t.Errorf("DetectPlatform(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestExtractURL(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"https://www.douyin.com/video/1": "https://www.douyin.com/video/1",
		"7.43 复制打开抖音，看看【作品】 https://v.douyin.com/iRNBho6u/ 03/21": "https://v.douyin.com/iRNBho6u/",
		"www.bilibili.com/video/BV1": "https://www.bilibili.com/video/BV1",
		"just some words":            "",
	}
	for in, want := range tests {
		if got := ExtractURL(in); got != want {
			t.Errorf("ExtractURL(%q) = %q, want %q", in, got, want)
		}
	}
}
