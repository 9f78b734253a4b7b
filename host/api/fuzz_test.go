package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/reelforge/reelforge/host/api"
	"github.com/reelforge/reelforge/host/app"
	"github.com/reelforge/reelforge/host/config"
)

// Hostile values the fuzz test puts in paths, query parameters and bodies.
var (
	fuzzParams = []string{"00000000-0000-0000-0000-000000000000", "%00", "%ff", "..%2f..%2fetc", strings.Repeat("a", 300),
		"-1", "9223372036854775808", "%F0%9F%98%80", "null"}
	fuzzQueries = []string{"page=9223372036854775807", "page=0&limit=-5", "limit=abc", "workflow=%00", "project_id=%ff",
		"status=%00", "q=" + strings.Repeat("x", 3000), "window=-1h", "since=notatime&until=%ff", "topK=99999999999999999999",
		"source_id=%00&token=%ff"}
	fuzzBodies = []string{`{}`, `[]`, `null`, `"text"`, `{"name":"a\u0000b"}`, "{\"name\":\"a\xffb\"}", `{"name":"ok"}}garbage`,
		strings.Repeat("[", 5000) + strings.Repeat("]", 5000), `{"page":1e400,"limit":-1,"top_k":1e400}`,
		`{"project_id":123,"projectId":[],"workflow":{},"inputs":"x","items":"x","text":5,"query":[],"question":{},"name":true,"urls":"x","rating":"x","key":[],"value":{},"status":1,"event":[],"answers":"x","type":[],"inputParams":"x","source_id":7}`,
		`{"project_id":"../../etc","projectId":"%00","workflow":"a\u0000","inputs":{"topic":"` + strings.Repeat("茶", 5000) + `"},"items":[{"text":""},{}],"text":"\ud800","query":"` + strings.Repeat("q ", 2000) + `","urls":["http://127.0.0.1:1/","file:///etc/passwd"],"rating":99,"status":"nope","event":"x","type":"x","name":"` + strings.Repeat("n", 1000) + `"}`,
	}
)

// TestFuzzEveryRoute sends every operation of the OpenAPI document hostile paths, queries and
// bodies, on each driver, through the App as host/app wires it: no answer is a 5xx, and every
// error is the envelope {success: false, error: {code, ...}}. It is bounded (a fixed set of
// values per operation, no time limit of its own).
func TestFuzzEveryRoute(t *testing.T) {
	t.Parallel()
	dbs := map[string]string{"sqlite": ""}
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		dbs["postgres"] = u
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(api.OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	type op struct{ method, path string }
	var ops []op
	for p, item := range doc.Paths {
		for m := range item {
			ops = append(ops, op{strings.ToUpper(m), p})
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].path+ops[i].method < ops[j].path+ops[j].method })
	param := regexp.MustCompile(`\{[^}]+\}`)
	for name, url := range dbs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := config.Defaults()
			cfg.JWTSecret = "test-secret-test-secret-test-secret"
			cfg.CallbackSecret = "test-callback-secret-test-callback"
			cfg.DataDir = t.TempDir()
			cfg.DatabaseURL = url
			cfg.ManifestDir = filepath.Join("..", "..", "manifests")
			cfg.PluginsEnabled = false
			cfg.RateLimitUser, cfg.RateLimitAuth = 1_000_000, 1_000_000
			h, err := app.New(t.Context(), &cfg, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatalf("app.New: %v", err)
			}
			t.Cleanup(func() { h.Store.Close() })
			fa := h.Server.App()
			send := func(method, target, body, ct, token string) (int, []byte) {
				var rd io.Reader
				if body != "" {
					rd = strings.NewReader(body)
				}
				req := httptest.NewRequest(method, target, rd)
				if ct != "" {
					req.Header.Set("Content-Type", ct)
				}
				if token != "" {
					req.Header.Set("Authorization", "Bearer "+token)
				}
				res, err := fa.Test(req, -1)
				if err != nil {
					return 0, []byte(err.Error()) // the server did not answer: counted as a failure
				}
				b, _ := io.ReadAll(res.Body)
				return res.StatusCode, b
			}
			email := fmt.Sprintf("fuzz-%s-%d@example.com", name, os.Getpid())
			st, b := send("POST", "/api/auth/register", `{"email":"`+email+`","password":"fuzz-password-1","username":"fuzz"}`, "application/json", "")
			var reg struct {
				Data struct{ Token string } `json:"data"`
			}
			if err := json.Unmarshal(b, &reg); err != nil || reg.Data.Token == "" {
				t.Fatalf("register = %d %s", st, b)
			}
			tok := reg.Data.Token
			bad, sent := 0, 0
			check := func(method, target, body string, status int, b []byte) {
				sent++
				problem := ""
				if status == 0 {
					problem = "no answer"
				} else if status >= 500 {
					problem = "a 5xx"
				} else if status >= 400 {
					var env struct {
						Success *bool `json:"success"`
						Error   struct {
							Code string `json:"code"`
						} `json:"error"`
					}
					if json.Unmarshal(b, &env) != nil || env.Success == nil || *env.Success || env.Error.Code == "" {
						problem = "not the error envelope"
					}
				}
				if problem != "" {
					bad++
					if bad <= 30 {
						t.Errorf("%s %s body %.80q = %d %.200s: %s", method, target, body, status, b, problem)
					}
				}
			}
			for _, o := range ops {
				if o.path == "/ws" {
					continue // an upgrade, refused in the envelope by its own tests
				}
				targets := []string{param.ReplaceAllString(o.path, "00000000-0000-0000-0000-000000000000")}
				if strings.Contains(o.path, "{") {
					for _, v := range fuzzParams {
						targets = append(targets, param.ReplaceAllString(o.path, v))
					}
				}
				for _, q := range fuzzQueries {
					targets = append(targets, targets[0]+"?"+q)
				}
				for _, target := range targets {
					st, b := send(o.method, target, "", "", tok)
					check(o.method, target, "", st, b)
				}
				if o.method == "POST" || o.method == "PUT" || o.method == "PATCH" {
					for _, body := range fuzzBodies {
						st, b := send(o.method, targets[0], body, "application/json", tok)
						check(o.method, targets[0], body, st, b)
					}
					st, b := send(o.method, targets[0], "--x\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\xff.txt\"\r\n\r\nhi\r\n--x--\r\n",
						"multipart/form-data; boundary=x", tok)
					check(o.method, targets[0], "multipart", st, b)
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d requests answered a 5xx or no envelope", bad, sent)
			}
			t.Logf("%d requests over %d operations", sent, len(ops))
		})
	}
}
