package content

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/net/html"

	"github.com/reelforge/reelforge/internal/netguard"
)

// ErrRefused is returned (wrapped) when a fetch would reach an address the SSRF guard refuses.
var ErrRefused = netguard.ErrRefused

// Page is the metadata of a fetched page.
type Page struct {
	URL         string // the final URL, after redirects
	Title       string
	Description string
	Image       string // absolute URL of og:image, if any
}

// Fetcher reads page metadata over HTTP with a timeout, a size cap and the SSRF guard of
// internal/netguard: every connection, redirects included, is checked on the address it actually
// dials, and loopback, private, link-local, unspecified and multicast addresses are refused unless
// allowed. It is safe for concurrent use.
type Fetcher struct {
	client   *http.Client
	maxBytes int64
}

// FetcherConfig configures NewFetcher.
type FetcherConfig struct {
	Timeout  time.Duration // whole request; 0 means 5 s
	MaxBytes int64         // body bytes read; 0 means 1 MiB
	// Allow lists hosts (exact names) or CIDRs (or single IPs) the guard lets through.
	Allow []string
}

// NewFetcher returns a Fetcher.
func NewFetcher(cfg FetcherConfig) *Fetcher {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = 1 << 20
	}
	return &Fetcher{client: netguard.New(cfg.Allow).Client(cfg.Timeout), maxBytes: cfg.MaxBytes}
}

// Fetch GETs rawURL and reads the page's title, description and cover image. Only http and https
// are fetched; the body is read up to the size cap.
func (f *Fetcher) Fetch(ctx context.Context, rawURL string) (*Page, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("content: fetch: not an http(s) URL")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("content: fetch: %w", err)
	}
	req.Header.Set("User-Agent", "Mozilla/5.0 (compatible; reelforge-preview/1.0)")
	req.Header.Set("Accept", "text/html,application/xhtml+xml;q=0.9,*/*;q=0.5")
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("content: fetch: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("content: fetch: status %d", resp.StatusCode)
	}
	page := &Page{URL: resp.Request.URL.String()}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != "" && mt != "text/html" && mt != "application/xhtml+xml" {
		return page, nil // not a page: nothing to read
	}
	parseMeta(io.LimitReader(resp.Body, f.maxBytes), resp.Request.URL, page)
	return page, nil
}

// parseMeta reads the head of an HTML document into p: og:title or <title>, og:description or
// description, og:image (resolved against base).
func parseMeta(r io.Reader, base *url.URL, p *Page) {
	z := html.NewTokenizer(r)
	var title, ogTitle, desc, ogDesc, image string
	inTitle := false
loop:
	for {
		switch z.Next() {
		case html.ErrorToken:
			break loop
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			switch string(name) {
			case "title":
				inTitle = true
			case "body":
				break loop
			case "meta":
				var key, content string
				for hasAttr {
					var k, v []byte
					k, v, hasAttr = z.TagAttr()
					switch strings.ToLower(string(k)) {
					case "property", "name", "itemprop":
						if key == "" {
							key = strings.ToLower(strings.TrimSpace(string(v)))
						}
					case "content":
						content = strings.TrimSpace(string(v))
					}
				}
				switch key {
				case "og:title", "twitter:title":
					if ogTitle == "" {
						ogTitle = content
					}
				case "og:description", "twitter:description":
					if ogDesc == "" {
						ogDesc = content
					}
				case "description":
					if desc == "" {
						desc = content
					}
				case "og:image", "og:image:url", "twitter:image", "image":
					if image == "" {
						image = content
					}
				}
			}
		case html.TextToken:
			if inTitle && title == "" {
				title = strings.TrimSpace(string(z.Text()))
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			switch string(name) {
			case "title":
				inTitle = false
			case "head":
				break loop
			}
		}
	}
	p.Title = clip(firstNonEmpty(ogTitle, title), 300)
	p.Description = clip(firstNonEmpty(ogDesc, desc), 1000)
	if image != "" {
		if iu, err := base.Parse(image); err == nil && (iu.Scheme == "http" || iu.Scheme == "https") {
			p.Image = iu.String()
		}
	}
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// clip cuts s to at most n runes.
func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return strings.TrimSpace(string(r[:n]))
}
