package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/gofiber/fiber/v2"
	"golang.org/x/crypto/bcrypt"

	"github.com/reelforge/reelforge/host/api"
	"github.com/reelforge/reelforge/host/auth"
	"github.com/reelforge/reelforge/host/config"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/pgstore"
	"github.com/reelforge/reelforge/host/store/sqlitestore"
	"github.com/reelforge/reelforge/host/store/storetest"
)

// testBundle is an API under test on one driver.
type testBundle struct {
	t   *testing.T
	app *fiber.App
	st  store.Driver
}

type driverCase struct {
	name string
	open func(t *testing.T) store.Driver
}

func drivers() []driverCase {
	return []driverCase{
		{"sqlite", func(t *testing.T) store.Driver {
			d, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "api.db"), sqlitestore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { d.Close() })
			return d
		}},
		{"postgres", func(t *testing.T) store.Driver {
			url := storetest.PostgresURL(t)
			schema := storetest.SchemaName()
			d, err := pgstore.Open(context.Background(), url, pgstore.Options{Schema: schema})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				d.Close()
				storetest.DropSchema(url, schema)
			})
			return d
		}},
	}
}

func setup(t *testing.T, open func(*testing.T) store.Driver, tweak ...func(*config.Config)) *testBundle {
	t.Helper()
	cfg := config.Defaults()
	cfg.JWTSecret = "test-secret-test-secret-test-secret"
	cfg.DataDir = t.TempDir()
	for _, f := range tweak {
		f(&cfg)
	}
	st := open(t)
	s := &api.Server{Config: &cfg, Store: st, Auth: auth.New(st, cfg.JWTSecret, bcrypt.MinCost),
		Log: slog.New(slog.DiscardHandler)}
	return &testBundle{t: t, app: s.App(), st: st}
}

type resp struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func (b *testBundle) do(method, path, token string, body any, headers ...string) resp {
	b.t.Helper()
	var reqBody []byte
	switch v := body.(type) {
	case nil:
	case string:
		reqBody = []byte(v)
	default:
		reqBody, _ = json.Marshal(v)
	}
	req := httptest.NewRequest(method, path, bytes.NewReader(reqBody))
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := b.app.Test(req, -1)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, path, err)
	}
	raw, _ := io.ReadAll(res.Body)
	checkContract(b.t, req, reqBody, res.StatusCode, res.Header, raw)
	out := resp{status: res.StatusCode, header: res.Header, raw: string(raw)}
	_ = json.Unmarshal(raw, &out.body)
	return out
}

func (r resp) data(key string) any {
	if d, ok := r.body["data"].(map[string]any); ok {
		return d[key]
	}
	return nil
}

func (r resp) code() string {
	e, _ := r.body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// user registers a user and returns its access token and id.
func (b *testBundle) user(name string) (token, id string) {
	b.t.Helper()
	r := b.do("POST", "/api/auth/register", "", map[string]any{"email": name + "@example.com", "password": "password-" + name, "username": name})
	if r.status != 201 {
		b.t.Fatalf("register %s = %d %s", name, r.status, r.raw)
	}
	u := r.data("user").(map[string]any)
	return r.data("token").(string), u["id"].(string)
}

func (b *testBundle) project(token, name string) string {
	b.t.Helper()
	r := b.do("POST", "/api/projects", token, map[string]any{"name": name})
	if r.status != 201 {
		b.t.Fatalf("create project = %d %s", r.status, r.raw)
	}
	return r.data("project").(map[string]any)["id"].(string)
}
