package api_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestTypedValidation: a typed operation's input that does not validate (huma says 422 with its
// own problem+json body) is answered as the hand-written validation answered it: 400
// VALIDATION_ERROR, the message "field: problem" and the details [{field, problem}].
func TestTypedValidation(t *testing.T) {
	t.Parallel()
	b := setup(t, drivers()[0].open)
	tok, _ := b.user("typed")
	pid := b.project(tok, "p")
	cases := []struct {
		name, method, path string
		body               any
		status             int
		message            string
	}{
		{"missing name", "POST", "/api/projects", map[string]any{"description": "d"}, 400, "name: is required"},
		{"empty name", "POST", "/api/projects", map[string]any{"name": ""}, 400, "name: is required"},
		{"long name", "POST", "/api/projects", map[string]any{"name": strings.Repeat("名", 201)}, 400, "name: must be at most 200 characters"},
		{"name of wrong type", "POST", "/api/projects", map[string]any{"name": 5}, 400, "name: must be of type string"},
		{"status not in the enum", "PUT", "/api/projects/" + pid, map[string]any{"status": "gone"}, 400, "status: must be one of active, archived"},
		{"blueprint not an object", "PUT", "/api/projects/" + pid, map[string]any{"blueprint": []int{1}}, 400, "blueprint: must be of type object"},
		{"malformed body", "POST", "/api/projects", `{"name":`, 400, "Malformed JSON body"},
		{"data after the body", "POST", "/api/projects", `{"name":"a"} x`, 400, "Malformed JSON body: data after the JSON value"},
		{"limit over 100", "GET", "/api/projects?limit=101", nil, 400, "limit: must be at most 100"},
		{"page not a number", "GET", "/api/projects?page=x", nil, 400, "page: must be of type integer"},
		{"status query not in the enum", "GET", "/api/projects?status=weird", nil, 400, "status: must be one of active, archived"},
		{"diagnosis without answers", "POST", "/api/strategy/diagnosis", map[string]any{}, 400, "answers: is required"},
		{"an answer neither text nor object", "POST", "/api/strategy/diagnosis", map[string]any{"answers": []any{"a", 5}}, 400,
			"answers[1]: must be one of the forms the document gives"},
		{"register without a username", "POST", "/api/auth/register", map[string]any{"email": "a@b.co", "password": "12345678"}, 400, "username: is required"},
		{"register with a short password", "POST", "/api/auth/register", map[string]any{"email": "a@b.co", "password": "1234567", "username": "u"}, 400,
			"password: must be at least 8 characters"},
		{"rewrite without content", "POST", "/api/strategy/rewrite", map[string]any{"style": "humorous"}, 400, "content: is required"},
	}
	for _, c := range cases {
		r := b.do(c.method, c.path, tok, c.body)
		e, _ := r.body["error"].(map[string]any)
		if r.status != c.status || r.code() != "VALIDATION_ERROR" || e["message"] != c.message || e["errno"] != 1001.0 {
			t.Errorf("%s: %s %s = %d %s, want %d VALIDATION_ERROR %q", c.name, c.method, c.path, r.status, r.raw, c.status, c.message)
			continue
		}
		if field, _, ok := strings.Cut(c.message, ": "); ok && !strings.HasPrefix(c.message, "Malformed") {
			want, _ := json.Marshal([]map[string]string{{"field": field, "problem": strings.TrimPrefix(c.message, field+": ")}})
			if got, _ := json.Marshal(e["details"]); string(got) != string(want) {
				t.Errorf("%s: details = %s, want %s", c.name, got, want)
			}
		}
	}
	// Login and refresh say nothing of what a form lacks: a missing field or body is a wrong
	// credential (401), as before.
	for _, c := range []struct {
		path string
		body any
	}{{"/api/auth/login", nil}, {"/api/auth/login", map[string]any{}}, {"/api/auth/login", map[string]any{"email": "nobody@x.co"}},
		{"/api/auth/refresh", nil}, {"/api/auth/refresh", map[string]any{}}} {
		if r := b.do("POST", c.path, "", c.body); r.status != 401 || r.code() != "AUTHENTICATION_ERROR" {
			t.Errorf("POST %s %v = %d %s, want 401 AUTHENTICATION_ERROR", c.path, c.body, r.status, r.raw)
		}
	}
	// An update without a body changes nothing, as before.
	if r := b.do("PUT", "/api/projects/"+pid, tok, nil); r.status != 200 || r.data("project").(map[string]any)["name"] != "p" {
		t.Errorf("PUT without a body = %d %s", r.status, r.raw)
	}
	// The access check answers a project that is not there before its body is read.
	if r := b.do("PUT", "/api/projects/00000000-0000-4000-8000-000000000000", tok, map[string]any{"name": "x"}); r.status != 404 {
		t.Errorf("PUT of a missing project = %d %s, want 404", r.status, r.raw)
	}
}
