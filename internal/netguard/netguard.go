// Package netguard is the module's one guard against server-side request forgery: an HTTP client
// for fetching links that users hand in (link previews in host/content, page metadata in the
// videoparse generator) which refuses loopback, private, link-local and other non-public addresses
// unless an allow-list names them.
//
// It lives at the module root, below both host/ and plugins/, so the two share one
// implementation without a plugin importing the host. It depends on the standard library only.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// ErrRefused is returned (wrapped) when a request would reach an address the guard refuses, or
// would be redirected to a scheme other than http and https.
var ErrRefused = errors.New("netguard: address not allowed")

// MaxRedirects is how many redirects a guarded client follows.
const MaxRedirects = 5

// Guard decides which addresses may be dialled. The zero value refuses every non-public address;
// it is safe for concurrent use.
type Guard struct {
	allowNet  []netip.Prefix
	allowHost map[string]bool
}

// New returns a Guard that also lets through allow: exact host names, single IPs or CIDRs
// (CONTENT_FETCH_ALLOW). Empty entries are ignored.
func New(allow []string) *Guard {
	g := &Guard{allowHost: map[string]bool{}}
	for _, a := range allow {
		a = strings.ToLower(strings.TrimSpace(a))
		if a == "" {
			continue
		}
		if p, err := netip.ParsePrefix(a); err == nil {
			g.allowNet = append(g.allowNet, p.Masked())
		} else if ip, err := netip.ParseAddr(a); err == nil {
			ip = ip.Unmap()
			g.allowNet = append(g.allowNet, netip.PrefixFrom(ip, ip.BitLen()))
		} else {
			g.allowHost[strings.TrimSuffix(a, ".")] = true
		}
	}
	return g
}

// Client returns an HTTP client whose every connection, redirects included, goes through the
// guard. timeout bounds the whole request (0 means 10 s). The client never uses a proxy: a proxy
// would dial for it and the guard would only see the proxy's address.
func (g *Guard) Client(timeout time.Duration) *http.Client {
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           g.DialContext,
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
		MaxIdleConns:          10,
		IdleConnTimeout:       30 * time.Second,
	}
	return &http.Client{Transport: tr, Timeout: timeout, CheckRedirect: CheckRedirect}
}

// CheckRedirect is the redirect policy of a guarded client: at most MaxRedirects, and only to http
// or https (the address of the target is checked when it is dialled).
func CheckRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= MaxRedirects {
		return errors.New("netguard: too many redirects")
	}
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return fmt.Errorf("netguard: redirect to scheme %q: %w", req.URL.Scheme, ErrRefused)
	}
	return nil
}

// DialContext connects to addr after checking it. The check runs in the dialer's Control hook,
// which sees the resolved IP of each attempt, so a host name that resolves to a private address
// (or re-resolves to one between two requests) is refused all the same.
func (g *Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	hostAllowed := g.allowHost[strings.TrimSuffix(strings.ToLower(host), ".")]
	d := net.Dialer{
		Timeout: 5 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error {
			if hostAllowed {
				return nil
			}
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("netguard: dial %s: %w", address, ErrRefused)
			}
			return g.Check(ap.Addr())
		},
	}
	return d.DialContext(ctx, network, addr)
}

// Check returns nil when ip may be dialled: it is public, or an allow-list entry covers it.
func (g *Guard) Check(ip netip.Addr) error {
	ip = ip.Unmap().WithZone("")
	for _, p := range g.allowNet {
		if p.Contains(ip) {
			return nil
		}
	}
	if Blocked(ip) {
		return fmt.Errorf("netguard: dial %s: %w", ip, ErrRefused)
	}
	return nil
}

// refusedNets are special ranges refused beside what netip classifies: the "this network" block,
// shared address space, IETF protocol assignments, documentation, benchmarking, reserved, NAT64.
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
