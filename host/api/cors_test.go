package api_test

import (
	"testing"

	"github.com/reelforge/reelforge/host/config"
)

// TestCORS: with CORS_ALLOW_ORIGINS set, a listed origin's preflight is answered without a token
// (on a public route, an authenticated one and the login), with credentials and a cached max
// age, and its real requests (even refused ones) carry Access-Control-Allow-Origin; an unlisted
// origin gets no CORS header; without the variable no response has any.
func TestCORS(t *testing.T) {
	t.Parallel()
	const origin = "https://app.example.com"
	open := drivers()[0].open
	b := setup(t, open, func(c *config.Config) { c.CORSAllowOrigins = []string{origin, "http://localhost:5173"} })
	preflight := func(b *testBundle, path, from string) resp {
		return b.do("OPTIONS", path, "", nil, "Origin", from, "Access-Control-Request-Method", "POST",
			"Access-Control-Request-Headers", "authorization,content-type")
	}
	for _, path := range []string{"/api/auth/login", "/api/projects", "/api/scheduler/trigger", "/health"} {
		r := preflight(b, path, origin)
		if r.status != 204 || r.header.Get("Access-Control-Allow-Origin") != origin ||
			r.header.Get("Access-Control-Allow-Credentials") != "true" || r.header.Get("Access-Control-Max-Age") != "600" {
			t.Errorf("preflight of %s = %d %v, want 204 with the origin, credentials and max age", path, r.status, r.header)
		}
	}
	if r := preflight(b, "/api/projects", "https://evil.example.com"); r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight from an unlisted origin got Access-Control-Allow-Origin %q", r.header.Get("Access-Control-Allow-Origin"))
	}
	tok, _ := b.user("cors")
	r := b.do("GET", "/api/projects", tok, nil, "Origin", origin)
	if r.status != 200 || r.header.Get("Access-Control-Allow-Origin") != origin || r.header.Get("Access-Control-Allow-Credentials") != "true" {
		t.Errorf("GET /api/projects from the origin = %d %v", r.status, r.header)
	}
	if r := b.do("GET", "/api/projects", "", nil, "Origin", origin); r.status != 401 || r.header.Get("Access-Control-Allow-Origin") != origin {
		t.Errorf("a refused request from the origin = %d %v, want 401 readable by the page", r.status, r.header)
	}

	plain := setup(t, open)
	if r := preflight(plain, "/api/auth/login", origin); r.header.Get("Access-Control-Allow-Origin") != "" || r.status == 204 {
		t.Errorf("without CORS_ALLOW_ORIGINS the preflight = %d %v, want no CORS answer", r.status, r.header)
	}
}
