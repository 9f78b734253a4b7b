package netguard_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/reelforge/reelforge/internal/netguard"
)

func server(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func get(c *http.Client, url string) error {
	res, err := c.Get(url)
	if err == nil {
		res.Body.Close()
	}
	return err
}

func TestClientRefusesNonPublicAddresses(t *testing.T) {
	t.Parallel()
	ok := server(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	redirect := server(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	// The redirector is reached through the allowed name localhost; the targets it names are not allowed.
	viaName := strings.Replace(redirect.URL, "127.0.0.1", "localhost", 1)
	tests := map[string]struct {
		allow []string
		url   string
	}{
		"loopback":                 {nil, ok.URL},
		"loopback by name":         {nil, strings.Replace(ok.URL, "127.0.0.1", "localhost", 1)},
		"metadata service":         {nil, "http://169.254.169.254/latest/meta-data/"},
		"private":                  {nil, "http://10.1.2.3/"},
		"unspecified":              {nil, "http://0.0.0.0:1/"},
		"ipv6 loopback":            {nil, "http://[::1]:1/"},
		"ipv4-mapped ipv6":         {nil, "http://[::ffff:127.0.0.1]:1/"},
		"ipv4-compatible ipv6":     {nil, strings.Replace(ok.URL, "127.0.0.1", "[::127.0.0.1]", 1)},
		"nat64 of loopback":        {nil, strings.Replace(ok.URL, "127.0.0.1", "[64:ff9b::127.0.0.1]", 1)},
		"6to4 of loopback":         {nil, strings.Replace(ok.URL, "127.0.0.1", "[2002:7f00:1::1]", 1)},
		"other loopback allowed":   {[]string{"127.0.0.2"}, ok.URL},
		"redirect to metadata":     {[]string{"localhost"}, viaName + "/?to=http://169.254.169.254/"},
		"redirect to loopback IP":  {[]string{"localhost"}, viaName + "/?to=" + ok.URL},
		"redirect to private":      {[]string{"localhost"}, viaName + "/?to=http://192.168.1.1/"},
		"redirect to a file":       {[]string{"localhost"}, viaName + "/?to=file:///etc/passwd"},
		"redirect to ipv6 private": {[]string{"localhost"}, viaName + "/?to=http://[fd00::1]/"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := netguard.New(tc.allow).Client(3 * time.Second)
			if err := get(c, tc.url); !errors.Is(err, netguard.ErrRefused) {
				t.Errorf("GET %s = %v, want ErrRefused", tc.url, err)
			}
		})
	}
}

func TestClientAllowList(t *testing.T) {
	t.Parallel()
	ok := server(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	redirect := server(t, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, ok.URL, http.StatusFound) })
	tests := map[string]struct {
		allow []string
		url   string
	}{
		"single IP":                {[]string{"127.0.0.1"}, ok.URL},
		"CIDR":                     {[]string{" 127.0.0.0/8 ", ""}, ok.URL},
		"host name":                {[]string{"LOCALHOST."}, strings.Replace(ok.URL, "127.0.0.1", "localhost", 1)},
		"redirect to allowed addr": {[]string{"127.0.0.1"}, redirect.URL},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if err := get(netguard.New(tc.allow).Client(3*time.Second), tc.url); err != nil {
				t.Errorf("GET %s with allow %q = %v, want success", tc.url, tc.allow, err)
			}
		})
	}
}

func TestRedirectLimit(t *testing.T) {
	t.Parallel()
	var loop *httptest.Server
	loop = server(t, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, loop.URL+"/again", http.StatusFound) })
	err := get(netguard.New([]string{"127.0.0.1"}).Client(3*time.Second), loop.URL)
	if err == nil || !strings.Contains(err.Error(), "too many redirects") {
		t.Errorf("GET of a redirect loop = %v, want too many redirects", err)
	}
}

func TestBlocked(t *testing.T) {
	t.Parallel()
	tests := map[string]bool{
		"127.0.0.1": true, "10.0.0.1": true, "172.16.5.4": true, "192.168.0.1": true, "169.254.169.254": true,
		"0.0.0.0": true, "224.0.0.1": true, "100.64.0.1": true, "::1": true, "fe80::1": true, "fc00::1": true,
		"::ffff:10.0.0.1": true, "ff02::1": true, "198.18.0.1": true, "93.184.216.34": false, "8.8.8.8": false,
		"2606:4700::1111": false,
		// IPv6 forms that embed an IPv4 address are judged by it (issue 37): the reproduction
		// dialled http://[::127.0.0.1]:port/.
		"::127.0.0.1": true, "::10.0.0.1": true, "::8.8.8.8": false,
		"::ffff:0:127.0.0.1": true, "::ffff:0:8.8.8.8": false,
		"64:ff9b::127.0.0.1": true, "64:ff9b::169.254.169.254": true, "64:ff9b::8.8.8.8": false,
		"64:ff9b:1:7f00:1:0:100::": true,  // 127.0.0.1 in RFC 6052's /48 layout
		"64:ff9b:1:808:8:8:0::":    false, // 8.8.8.8 there
		"2002:7f00:1::1":           true, "2002:a9fe:a9fe::": true, "2002:808:808::1": false,
		"2001:0:7f00:1::808:808":    true,  // Teredo: server 127.0.0.1
		"2001:0:808:808::80ff:fffe": true,  // Teredo: client 127.0.0.1 (inverted)
		"2001:0:808:808::f7f7:f7f7": false, // Teredo: server and client 8.8.8.8
	}
	for ip, want := range tests {
		if got := netguard.Blocked(netip.MustParseAddr(ip)); got != want {
			t.Errorf("Blocked(%s) = %v, want %v", ip, got, want)
		}
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	g := netguard.New([]string{"10.0.0.0/8", "fd00::1"})
	tests := map[string]bool{"10.9.8.7": true, "::ffff:10.1.1.1": true, "fd00::1": true, "fd00::2": false, "192.168.1.1": false, "8.8.8.8": true,
		"::10.1.1.1": true, "::192.168.1.1": false, "64:ff9b::a00:1": true, "64:ff9b::c0a8:101": false, "2002:c0a8:101::": false}
	for ip, want := range tests {
		if got := g.Check(netip.MustParseAddr(ip)) == nil; got != want {
			t.Errorf("Check(%s) allowed = %v, want %v", ip, got, want)
		}
	}
}
