package content

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"golang.org/x/net/html"
)

// ErrRefused is returned (wrapped) when a fetch would reach an address the SSRF guard refuses.
var ErrRefused = errors.New("content: address not allowed")

// Page is the metadata of a fetched page.
type Page struct {
	URL         string // the final URL, after redirects
	Title       string
	Description string
	Image       string // absolute URL of og:image, if any
}

// Fetcher reads page metadata over HTTP with a timeout, a size cap and an SSRF guard: every
// connection, redirects included, is checked on the address it actually dials, and loopback,
// private, link-local, unspecified and multicast addresses are refused unless allowed.
// It is safe for concurrent use.
type Fetcher struct {
	client   *http.Client
	maxBytes int64
	allowNet []netip.Prefix
	allowHst map[string]bool
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
	f := &Fetcher{maxBytes: cfg.MaxBytes, allowHst: map[string]bool{}}
	for _, a := range cfg.Allow {
		a = strings.ToLower(strings.TrimSpace(a))
		if a == "" {
			continue
		}
		if p, err := netip.ParsePrefix(a); err == nil {
			f.allowNet = append(f.allowNet, p.Masked())
		} else if ip, err := netip.ParseAddr(a); err == nil {
			f.allowNet = append(f.allowNet, netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen()))
		} else {
			f.allowHst[strings.TrimSuffix(a, ".")] = true
		}
	}
	tr := &http.Transport{
		Proxy:                 nil, // a proxy would dial for us and bypass the guard
		DialContext:           f.dial,
		TLSHandshakeTimeout:   cfg.Timeout,
		ResponseHeaderTimeout: cfg.Timeout,
		MaxIdleConns:          10,
		IdleConnTimeout:       30 * time.Second,
		DisableCompression:    false,
	}
	f.client = &http.Client{
		Transport: tr,
		Timeout:   cfg.Timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("content: too many redirects")
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return fmt.Errorf("content: redirect to scheme %q: %w", req.URL.Scheme, ErrRefused)
			}
			return nil
		},
	}
	return f
}

// dial connects to addr; the Control function sees the resolved IP of each attempt, so a host
// name that resolves to a private address (or a redirect to one) is refused all the same.
func (f *Fetcher) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	hostAllowed := f.allowHst[strings.TrimSuffix(strings.ToLower(host), ".")]
	d := net.Dialer{
		Timeout: 5 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error {
			if hostAllowed {
				return nil
			}
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("content: dial %s: %w", address, ErrRefused)
			}
			return f.checkIP(ap.Addr())
		},
	}
	return d.DialContext(ctx, network, addr)
}

// special ranges refused beside what netip classifies: shared address space, benchmarking,
// IETF protocol assignments, documentation, reserved and the "this network" block.
var refusedNets = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("2001:db8::/32"),
}

func (f *Fetcher) checkIP(ip netip.Addr) error {
	ip = ip.Unmap().WithZone("")
	for _, p := range f.allowNet {
		if p.Contains(ip) {
			return nil
		}
	}
	if Blocked(ip) {
		return fmt.Errorf("content: dial %s: %w", ip, ErrRefused)
	}
	return nil
}

// Blocked reports whether the guard refuses ip when no allow-list entry covers it.
func Blocked(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return true
	}
	for _, p := range refusedNets {
		if p.Contains(ip) {
			return true
		}
	}
	return false
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
