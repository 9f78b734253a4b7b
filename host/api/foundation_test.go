package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/config"
	"github.com/reelforge/reelforge/host/store"
)

func TestAuthFlows(t *testing.T) {
	t.Parallel()
	for _, d := range drivers() {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, d.open)
			reg := b.do("POST", "/api/auth/register", "", map[string]any{"email": "Ann@Example.com", "password": "password1", "username": "ann"})
			if reg.status != 201 || reg.body["token"] == nil || reg.data("refreshToken") == nil {
				t.Fatalf("register = %d %s", reg.status, reg.raw)
			}
			refresh := reg.data("refreshToken").(string)
			tests := map[string]struct {
				method, path, token string
				body                any
				wantStatus          int
				wantCode            string
			}{
				"duplicate email other case": {"POST", "/api/auth/register", "", map[string]any{"email": "ANN@example.com", "password": "password1", "username": "x"}, 409, "VALIDATION_ERROR"},
				"short password":             {"POST", "/api/auth/register", "", map[string]any{"email": "b@example.com", "password": "1234567", "username": "b"}, 400, "VALIDATION_ERROR"},
				"long password":              {"POST", "/api/auth/register", "", map[string]any{"email": "b@example.com", "password": strings.Repeat("p", 129), "username": "b"}, 400, "VALIDATION_ERROR"},
				"bad email":                  {"POST", "/api/auth/register", "", map[string]any{"email": "nope", "password": "password1", "username": "b"}, 400, "VALIDATION_ERROR"},
				"wrong password":             {"POST", "/api/auth/login", "", map[string]any{"email": "ann@example.com", "password": "password2"}, 401, "AUTHENTICATION_ERROR"},
				"unknown email":              {"POST", "/api/auth/login", "", map[string]any{"email": "zed@example.com", "password": "password1"}, 401, "AUTHENTICATION_ERROR"},
				"login other case":           {"POST", "/api/auth/login", "", map[string]any{"email": "ANN@EXAMPLE.COM", "password": "password1"}, 200, ""},
				"me without token":           {"GET", "/api/auth/me", "", nil, 401, "AUTHENTICATION_ERROR"},
				"me with garbage":            {"GET", "/api/auth/me", "garbage", nil, 401, "AUTHENTICATION_ERROR"},
				"me with refresh token":      {"GET", "/api/auth/me", refresh, nil, 401, "AUTHENTICATION_ERROR"},
				"garbage refresh":            {"POST", "/api/auth/refresh", "", map[string]any{"refreshToken": "garbage"}, 401, "AUTHENTICATION_ERROR"},
				"malformed json":             {"POST", "/api/auth/login", "", `{"email":`, 400, "VALIDATION_ERROR"},
			}
			for name, tc := range tests {
				r := b.do(tc.method, tc.path, tc.token, tc.body)
				if r.status != tc.wantStatus || r.code() != tc.wantCode {
					t.Errorf("%s: %s %s = %d %q, want %d %q (%s)", name, tc.method, tc.path, r.status, r.code(), tc.wantStatus, tc.wantCode, r.raw)
				}
			}
			// Rotation: the new pair works, the old token is refused and its reuse revokes the family.
			r1 := b.do("POST", "/api/auth/refresh", "", map[string]any{"refreshToken": refresh})
			if r1.status != 200 {
				t.Fatalf("refresh = %d %s", r1.status, r1.raw)
			}
			next := r1.data("refreshToken").(string)
			if me := b.do("GET", "/api/auth/me", r1.data("token").(string), nil); me.status != 200 {
				t.Errorf("me with refreshed token = %d", me.status)
			}
			if again := b.do("POST", "/api/auth/refresh", "", map[string]any{"refreshToken": refresh}); again.status != 401 {
				t.Errorf("reuse of a refresh token = %d, want 401", again.status)
			}
			if fam := b.do("POST", "/api/auth/refresh", "", map[string]any{"refreshToken": next}); fam.status != 401 {
				t.Errorf("refresh after family revocation = %d, want 401", fam.status)
			}
		})
	}
}

func TestCrossUserProjectSweep(t *testing.T) {
	t.Parallel()
	for _, d := range drivers() {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, d.open)
			a, _ := b.user("alice")
			other, _ := b.user("bob")
			pid := b.project(a, "alice's")
			deleted := b.project(other, "gone")
			if r := b.do("DELETE", "/api/projects/"+deleted, other, nil); r.status != 200 {
				t.Fatalf("delete = %d", r.status)
			}
			missing := uuid.NewString()
			tests := map[string]struct {
				method, path, token string
				body                any
				wantStatus          int
				wantCode            string
			}{
				"get other's":        {"GET", "/api/projects/" + pid, other, nil, 403, "AUTHORIZATION_ERROR"},
				"put other's":        {"PUT", "/api/projects/" + pid, other, map[string]any{"name": "x"}, 403, "AUTHORIZATION_ERROR"},
				"delete other's":     {"DELETE", "/api/projects/" + pid, other, nil, 403, "AUTHORIZATION_ERROR"},
				"tasks of other's":   {"GET", "/api/projects/" + pid + "/tasks", other, nil, 403, "AUTHORIZATION_ERROR"},
				"get deleted":        {"GET", "/api/projects/" + deleted, other, nil, 403, "AUTHORIZATION_ERROR"},
				"put deleted":        {"PUT", "/api/projects/" + deleted, other, map[string]any{"name": "x"}, 403, "AUTHORIZATION_ERROR"},
				"get missing":        {"GET", "/api/projects/" + missing, a, nil, 404, "NOT_FOUND"},
				"delete missing":     {"DELETE", "/api/projects/" + missing, a, nil, 404, "NOT_FOUND"},
				"list":               {"GET", "/api/projects", a, nil, 200, ""},
				"bad limit":          {"GET", "/api/projects?limit=101", a, nil, 400, "VALIDATION_ERROR"},
				"bad status":         {"GET", "/api/projects?status=weird", a, nil, 400, "VALIDATION_ERROR"},
				"empty name":         {"POST", "/api/projects", a, map[string]any{"name": ""}, 400, "VALIDATION_ERROR"},
				"long name":          {"POST", "/api/projects", a, map[string]any{"name": strings.Repeat("n", 201)}, 400, "VALIDATION_ERROR"},
				"name of wrong type": {"POST", "/api/projects", a, map[string]any{"name": 5}, 400, "VALIDATION_ERROR"},
				"unknown route":      {"GET", "/api/nope", a, nil, 404, "NOT_FOUND"},
			}
			for name, tc := range tests {
				r := b.do(tc.method, tc.path, tc.token, tc.body)
				if r.status != tc.wantStatus || r.code() != tc.wantCode {
					t.Errorf("%s: %s %s = %d %q, want %d %q (%s)", name, tc.method, tc.path, r.status, r.code(), tc.wantStatus, tc.wantCode, r.raw)
				}
				if r.status == 403 && !strings.Contains(r.raw, "Forbidden: project not accessible") {
					t.Errorf("%s: 403 without the contract's message: %s", name, r.raw)
				}
				if r.header.Get("X-Request-Id") == "" || r.header.Get("X-API-Version") != "v1" {
					t.Errorf("%s: missing standard headers %v", name, r.header)
				}
			}
			// The owner still sees the project unchanged.
			if r := b.do("GET", "/api/projects/"+pid, a, nil); r.status != 200 || r.data("project").(map[string]any)["name"] != "alice's" {
				t.Errorf("owner's project after refused calls = %d %s", r.status, r.raw)
			}
		})
	}
}

func TestIdempotencyAndLimits(t *testing.T) {
	t.Parallel()
	b := setup(t, drivers()[0].open, func(c *config.Config) { c.RateLimitUser = 30; c.RateLimitAuth = 5 })
	a, _ := b.user("carol")
	key := uuid.NewString()
	r1 := b.do("POST", "/api/projects", a, map[string]any{"name": "idem"}, "Idempotency-Key", key)
	r2 := b.do("POST", "/api/projects", a, map[string]any{"name": "idem"}, "Idempotency-Key", key)
	if r1.status != 201 || r2.status != 201 || r1.raw != r2.raw || r2.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay = %d %q / %d %q replayed=%q", r1.status, r1.raw, r2.status, r2.raw, r2.header.Get("Idempotent-Replayed"))
	}
	if r3 := b.do("POST", "/api/projects", a, map[string]any{"name": "other"}, "Idempotency-Key", key); r3.status != 409 || r3.code() != "VALIDATION_ERROR" {
		t.Errorf("same key other body = %d %s", r3.status, r3.raw)
	}
	big := fmt.Sprintf(`{"name":"x","description":"%s"}`, strings.Repeat("x", 1<<20+10))
	if r := b.do("POST", "/api/projects", a, big); r.status != 413 || r.code() != "VALIDATION_ERROR" {
		t.Errorf("1 MiB body = %d %s", r.status, r.raw)
	}
	var limited resp
	for range 40 {
		if limited = b.do("GET", "/api/projects", a, nil); limited.status == 429 {
			break
		}
	}
	if limited.status != 429 || limited.code() != "RATE_LIMIT_EXCEEDED" || limited.header.Get("Retry-After") == "" {
		t.Errorf("per-user limit = %d %s (Retry-After %q)", limited.status, limited.raw, limited.header.Get("Retry-After"))
	}
	for range 10 {
		limited = b.do("POST", "/api/auth/login", "", map[string]any{"email": "x@example.com", "password": "password1"})
	}
	if limited.status != 429 || limited.header.Get("Retry-After") == "" {
		t.Errorf("login limit = %d %s", limited.status, limited.raw)
	}
}

func TestHealth(t *testing.T) {
	t.Parallel()
	b := setup(t, drivers()[0].open)
	r := b.do("GET", "/health", "", nil)
	db, _ := r.body["database"].(map[string]any)
	if r.status != 200 || r.body["status"] != "ok" || db["driver"] != "sqlite" || db["ok"] != true {
		t.Errorf("health = %d %s", r.status, r.raw)
	}
	b.st.Close()
	if r := b.do("GET", "/health", "", nil); r.status != 503 {
		t.Errorf("health with the database closed = %d %s, want 503", r.status, r.raw)
	}
}

// The projects listing (Fiber's encoder, goccy/go-json) must be the bytes encoding/json writes for
// the same envelope, on both drivers, empty pages included ("data":[], never null).
func TestProjectListingBytes(t *testing.T) {
	t.Parallel()
	for _, d := range drivers() {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, d.open)
			reg := b.do("POST", "/api/auth/register", "", map[string]any{"email": "bytes@example.com", "password": "password1", "username": "b"})
			tok, _ := reg.body["token"].(string)
			uid, _ := reg.data("user").(map[string]any)["id"].(string)
			check := func(query string, params store.ListProjectsParams, page int) {
				t.Helper()
				r := b.do("GET", "/api/projects"+query, tok, nil)
				items, total, err := b.st.ListProjects(context.Background(), params)
				if err != nil {
					t.Fatal(err)
				}
				if items == nil {
					items = []store.Project{}
				}
				want, _ := json.Marshal(fiber.Map{"success": true, "data": items, "total": total, "page": page, "limit": params.Limit})
				if r.status != 200 || r.raw != string(want) || r.header.Get("Content-Type") != "application/json" {
					t.Errorf("GET /api/projects%s = %d %s\n%s\nwant\n%s", query, r.status, r.header.Get("Content-Type"), r.raw, want)
				}
			}
			check("", store.ListProjectsParams{UserID: uid, Limit: 20}, 1)
			for _, name := range []string{"<b>&amp;</b> 名前", "line\nbreak \"q\" \u2028"} {
				if r := b.do("POST", "/api/projects", tok, map[string]any{"name": name, "description": name,
					"blueprint": map[string]any{"html": "<a href='x'>&</a>", "days": []int{1, 2}}}); r.status != 201 {
					t.Fatalf("create = %d %s", r.status, r.raw)
				}
			}
			check("", store.ListProjectsParams{UserID: uid, Limit: 20}, 1)
			check("?limit=1&page=2", store.ListProjectsParams{UserID: uid, Limit: 1, Offset: 1}, 2)
			check("?status=archived", store.ListProjectsParams{UserID: uid, Status: "archived", Limit: 20}, 1)
		})
	}
}

// prewarmed is a store whose prewarm reports st.
type prewarmed struct {
	store.Driver
	st store.PrewarmStatus
}

func (p prewarmed) PrewarmStatus() store.PrewarmStatus { return p.st }

// TestHealthPrewarm: /health gives the prewarm's state (PostgreSQL) and warns when the tables
// are not prewarmed after a restart and the server does not restore its buffers itself either.
func TestHealthPrewarm(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 26, 21, 0, 0, 0, time.UTC)
	tests := map[string]struct {
		st       store.PrewarmStatus
		warn     bool
		wantKeys string // each "key":value of the prewarm's object wanted, comma-separated
	}{
		"done": {store.PrewarmStatus{State: "done", Started: t0, Finished: t0.Add(2500 * time.Millisecond), BufferBytes: 5 << 20},
			false, `"state":"done","buffer_bytes":5242880,"cache_bytes":0,"left_bytes":0,"seconds":2.5`},
		"unavailable": {store.PrewarmStatus{State: "unavailable", Reason: "no pg_prewarm"}, true, `"state":"unavailable","reason":"no pg_prewarm"`},
		"autoprewarm": {store.PrewarmStatus{State: "unavailable", Reason: "no pg_prewarm", Autoprewarm: true}, false, `"state":"unavailable"`},
		"failed":      {store.PrewarmStatus{State: "failed", Reason: "permission denied"}, true, `"state":"failed"`},
		"off":         {store.PrewarmStatus{State: "off"}, false, `"state":"off"`},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := drivers()[0].open(t)
			r := setup(t, func(*testing.T) store.Driver { return prewarmed{d, tt.st} }).do("GET", "/health", "", nil)
			w, _ := r.body["warnings"].([]any)
			warned := len(w) == 1 && strings.Contains(w[0].(string), "CREATE EXTENSION pg_prewarm")
			db, _ := json.Marshal(r.body["database"])
			if r.status != 200 || r.body["status"] != "ok" || warned != tt.warn || len(w) > 1 {
				t.Errorf("health = %d %s; want ok, a warning naming pg_prewarm: %v", r.status, r.raw, tt.warn)
			}
			for _, k := range strings.Split(tt.wantKeys, ",") {
				if !strings.Contains(string(db), k) {
					t.Errorf("health database = %s; want %s in it", db, k)
				}
			}
		})
	}
}

// bigIndex is a store whose vector index reports six times the size of its buffer cache, and
// pending rows.
type bigIndex struct {
	store.Driver
	pending int64
}

func (bigIndex) SupportsVectorSearch() bool { return true }
func (b bigIndex) VectorIndexStatus(context.Context) (store.VectorIndexStatus, error) {
	return store.VectorIndexStatus{IndexBytes: 800 << 20, SharedBufferBytes: 128 << 20, Pending: b.pending, PendingLimit: 10000}, nil
}

// TestHealthVectorIndex: with pgvector, /health reports the HNSW index's size against
// shared_buffers (PostgreSQL's own figures) and warns when the index does not fit.
func TestHealthVectorIndex(t *testing.T) {
	t.Parallel()
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		d := drivers()[1].open(t)
		if !d.SupportsVectorSearch() {
			t.Skip("pgvector unavailable")
		}
		r := setup(t, func(*testing.T) store.Driver { return d }).do("GET", "/health", "", nil)
		db, _ := r.body["database"].(map[string]any)
		vi, _ := db["vector_index"].(map[string]any)
		if r.status != 200 || vi == nil || vi["shared_buffers_bytes"].(float64) < 1<<20 || vi["fits_buffer_cache"] != true || r.body["warnings"] != nil {
			t.Errorf("health = %d %s; want the vector index's figures, fitting, no warning", r.status, r.raw)
		}
		if pw, _ := db["prewarm"].(map[string]any); pw == nil || (pw["state"] != "running" && pw["state"] != "waiting" && pw["state"] != "done") {
			t.Errorf("health = %s; want the prewarm's state, running or done", r.raw)
		}
	})
	t.Run("too big", func(t *testing.T) {
		t.Parallel()
		d := drivers()[0].open(t)
		r := setup(t, func(*testing.T) store.Driver { return bigIndex{d, 7} }).do("GET", "/health", "", nil)
		w, _ := r.body["warnings"].([]any)
		if r.status != 200 || r.body["status"] != "ok" || len(w) != 1 || !strings.Contains(w[0].(string), "shared_buffers to at least 1001 MB") {
			t.Errorf("health = %d %s; want ok with a warning naming shared_buffers", r.status, r.raw)
		}
	})
	// Pending rows are counted up to the limit (the indexer's backlog past which it no longer
	// rests): under it no word of them, at it a second warning.
	t.Run("backlog", func(t *testing.T) {
		t.Parallel()
		d := drivers()[0].open(t)
		for _, tt := range []struct {
			pending int64
			warn    bool
		}{{9999, false}, {10000, true}} {
			r := setup(t, func(*testing.T) store.Driver { return bigIndex{d, tt.pending} }).do("GET", "/health", "", nil)
			w, _ := r.body["warnings"].([]any)
			warned := len(w) == 2 && strings.Contains(w[1].(string), "10000 or more knowledge chunks are waiting for the HNSW index")
			if r.status != 200 || r.body["status"] != "ok" || warned != tt.warn || !warned && len(w) != 1 {
				t.Errorf("health with %d pending = %d %s; want ok, a backlog warning: %v", tt.pending, r.status, r.raw, tt.warn)
			}
		}
	})
}
