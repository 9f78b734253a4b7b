package api_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/reelforge/reelforge/host/api"
	"github.com/reelforge/reelforge/host/app"
	"github.com/reelforge/reelforge/host/config"
)

// pendingRoutes are documented operations whose routes are not registered yet (a part built on
// another branch), as "METHOD /path/{param}". Empty when every documented route is served. The
// test fails for a line whose route is registered, and for any other difference.
var pendingRoutes = map[string]bool{}

// TestOpenAPIMatchesRoutes compares the routes the App registers (method and path, :param written
// {param}, without HEAD and the catch-all) with the document's operations, both ways.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()
	// The App as host/app wires it, with every service this build has.
	cfg := config.Defaults()
	cfg.JWTSecret = "test-secret-test-secret-test-secret"
	cfg.DataDir = t.TempDir()
	cfg.ManifestDir = filepath.Join("..", "..", "manifests")
	cfg.PluginsEnabled = false
	h, err := app.New(t.Context(), &cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	t.Cleanup(func() { h.Store.Close() })
	fiberApp := h.Server.App()

	routes := map[string]bool{}
	for _, r := range fiberApp.GetRoutes(true) {
		if r.Method == "HEAD" || r.Method == "USE" || r.Path == "/" || r.Path == "/*" {
			continue
		}
		routes[r.Method+" "+fiberParam.ReplaceAllString(r.Path, "{$1}")] = true
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(api.OpenAPI(), &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	ops := map[string]bool{}
	for p, item := range doc.Paths {
		for m := range item {
			ops[strings.ToUpper(m)+" "+p] = true
		}
	}
	var undocumented, unrouted, pending, landed []string
	for r := range routes {
		if !ops[r] {
			undocumented = append(undocumented, r)
		}
		if pendingRoutes[r] {
			landed = append(landed, r)
		}
	}
	for o := range ops {
		switch {
		case routes[o]:
		case pendingRoutes[o]:
			pending = append(pending, o)
		default:
			unrouted = append(unrouted, o)
		}
	}
	for p := range pendingRoutes {
		if !ops[p] {
			unrouted = append(unrouted, p+" (in pendingRoutes but not documented)")
		}
	}
	slices.Sort(undocumented)
	slices.Sort(unrouted)
	slices.Sort(pending)
	slices.Sort(landed)
	if len(pending) > 0 {
		t.Logf("%d documented operations wait for their routes (pendingRoutes):\n  %s", len(pending), strings.Join(pending, "\n  "))
	}
	if len(landed) > 0 {
		t.Errorf("these routes are registered now: delete them from pendingRoutes in host/api/openapi_test.go:\n  %s",
			strings.Join(landed, "\n  "))
	}
	if len(undocumented) > 0 || len(unrouted) > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "the routes and openapi.json differ (%d routes, %d operations)\n", len(routes), len(ops))
		fmt.Fprintf(&b, "routes without an operation (%d): declare them as typed operations (docs/api.md):\n  %s\n",
			len(undocumented), strings.Join(undocumented, "\n  "))
		fmt.Fprintf(&b, "operations without a route (%d): documented, not registered by Server.App():\n  %s",
			len(unrouted), strings.Join(unrouted, "\n  "))
		t.Error(b.String())
	}
}

// TestOpenAPIRefsResolve: every $ref names a component of the document.
func TestOpenAPIRefsResolve(t *testing.T) {
	t.Parallel()
	var doc map[string]any
	if err := json.Unmarshal(api.OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc["openapi"] != "3.1.0" {
		t.Errorf("openapi = %v, want 3.1.0", doc["openapi"])
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if r, ok := x["$ref"].(string); ok {
				parts := strings.Split(strings.TrimPrefix(r, "#/"), "/")
				var cur any = doc
				for _, p := range parts {
					m, _ := cur.(map[string]any)
					cur = m[p]
				}
				if cur == nil {
					t.Errorf("$ref %s does not resolve", r)
				}
			}
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(doc)
}

func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	b := setup(t, drivers()[0].open)
	r := b.do("GET", "/api/openapi.json", "", nil)
	if r.status != 200 || r.body["openapi"] != "3.1.0" {
		t.Errorf("GET /api/openapi.json = %d, openapi %v", r.status, r.body["openapi"])
	}
}

// fiberParam is a parameter of a Fiber path (/api/projects/:id), {id} in the document's.
var fiberParam = regexp.MustCompile(`:([A-Za-z0-9_]+)`)
