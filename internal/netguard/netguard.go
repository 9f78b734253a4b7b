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

// Check returns nil when ip may be dialled: it is public, or an allow-list entry covers it. An
// IPv6 address that embeds IPv4 ones (Embedded) is judged by those: each must be public or
// allowed, unless an entry covers the IPv6 address itself.
func (g *Guard) Check(ip netip.Addr) error {
	ip = ip.Unmap().WithZone("")
	if g.allowed(ip) {
		return nil
	}
	judged := Embedded(ip)
	if judged == nil {
		judged = []netip.Addr{ip}
	}
	for _, a := range judged {
		if !g.allowed(a) && blocked(a) {
			return fmt.Errorf("netguard: dial %s: %w", ip, ErrRefused)
		}
	}
	return nil
}

func (g *Guard) allowed(ip netip.Addr) bool {
	for _, p := range g.allowNet {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// refusedNets are special ranges refused beside what netip classifies: the "this network" block,
// shared address space, IETF protocol assignments, documentation, benchmarking, reserved. The
// IPv6 forms that carry an IPv4 address (NAT64, 6to4, Teredo, ...) are judged by that address
// (Embedded), not refused or let through as a whole.
var refusedNets = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("2001:db8::/32"),
}

// Blocked reports whether the guard refuses ip when no allow-list entry covers it: ip is not
// public, or it embeds an IPv4 address that is not.
func Blocked(ip netip.Addr) bool {
	ip = ip.Unmap().WithZone("")
	if blocked(ip) {
		return true
	}
	for _, a := range Embedded(ip) {
		if blocked(a) {
			return true
		}
	}
	return false
}

func blocked(ip netip.Addr) bool {
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

// Embedding IPv6 ranges: a packet to one of these reaches (through a translator, a relay or a
// stack that takes the deprecated form literally) the IPv4 address inside it.
var (
	compatNet     = netip.MustParsePrefix("::/96")           // IPv4-compatible (RFC 4291, deprecated)
	mappedNet     = netip.MustParsePrefix("::ffff:0:0/96")   // IPv4-mapped
	translatedNet = netip.MustParsePrefix("::ffff:0:0:0/96") // IPv4-translated (RFC 2765)
	nat64Net      = netip.MustParsePrefix("64:ff9b::/96")    // NAT64 well-known prefix (RFC 6052)
	nat64LocalNet = netip.MustParsePrefix("64:ff9b:1::/48")  // NAT64 local-use prefix (RFC 8215)
	sixToFourNet  = netip.MustParsePrefix("2002::/16")       // 6to4 (RFC 3056)
	teredoNet     = netip.MustParsePrefix("2001::/32")       // Teredo (RFC 4380)
)

// Embedded returns the IPv4 addresses an IPv6 address carries: the last 32 bits of ::/96,
// ::ffff:0:0/96, ::ffff:0:0:0/96 and 64:ff9b::/96; bits 48-63 and 72-87 of 64:ff9b:1::/48 (RFC
// 6052's layout for a /48 prefix); bits 16-47 of 6to4's 2002::/16; Teredo's server (bits 32-63)
// and its client (the last 32 bits, inverted). It returns nil for any other address, IPv4 ones
// included.
func Embedded(ip netip.Addr) []netip.Addr {
	ip = ip.WithZone("")
	if !ip.Is6() {
		return nil
	}
	b := ip.As16()
	v4 := func(a, c, d, e byte) netip.Addr { return netip.AddrFrom4([4]byte{a, c, d, e}) }
	last := v4(b[12], b[13], b[14], b[15])
	switch {
	case mappedNet.Contains(ip), translatedNet.Contains(ip), nat64Net.Contains(ip):
		return []netip.Addr{last}
	case compatNet.Contains(ip):
		if ip.IsUnspecified() || ip.IsLoopback() { // :: and ::1 are themselves, not 0.0.0.0 and 0.0.0.1
			return nil
		}
		return []netip.Addr{last}
	case nat64LocalNet.Contains(ip):
		return []netip.Addr{v4(b[6], b[7], b[9], b[10])}
	case sixToFourNet.Contains(ip):
		return []netip.Addr{v4(b[2], b[3], b[4], b[5])}
	case teredoNet.Contains(ip):
		return []netip.Addr{v4(b[4], b[5], b[6], b[7]), v4(^b[12], ^b[13], ^b[14], ^b[15])}
	}
	return nil
}
