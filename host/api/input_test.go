package api_test

import (
	"strings"
	"testing"
)

// Input a database cannot store alike (NUL, bytes that are not UTF-8), out-of-range paging and
// trailing data after a JSON body are 400 VALIDATION_ERROR on both drivers, before any handler.
func TestHostileInput(t *testing.T) {
	t.Parallel()
	for _, dc := range drivers() {
		t.Run(dc.name, func(t *testing.T) {
			t.Parallel()
			b := kbSetup(t, dc.open)
			tok, _ := b.user("input-" + dc.name)
			nulForm, nulCT := multipartBody(t, map[string]string{"title": "a\x00b"}, "a.txt", "text")
			tests := []struct {
				Name, Method, URL string
				Body              any
				Headers           []string
				WantStatus        int
				WantContains      string
			}{
				{"NUL escape in a JSON string", "POST", "/api/projects", `{"name":"a\u0000b"}`, nil, 400, "NUL"},
				{"escaped backslash before u0000 is text", "POST", "/api/projects", `{"name":"a\\u0000b"}`, nil, 201, `"project"`},
				{"bytes that are not UTF-8 in JSON", "POST", "/api/projects", "{\"name\":\"a\xffb\"}", nil, 400, "UTF-8"},
				{"trailing data after the JSON body", "POST", "/api/projects", `{"name":"ok"}}garbage`, nil, 400, "data after the JSON value"},
				{"a second JSON value", "POST", "/api/projects", `{"name":"ok"} {"name":"two"}`, nil, 400, "VALIDATION_ERROR"},
				{"NUL in a query parameter", "GET", "/api/workflow/runs?workflow=%00", nil, nil, 400, `"workflow"`},
				{"bytes that are not UTF-8 in a query parameter", "GET", "/api/knowledge/documents?project_id=%ff", nil, nil, 400, "UTF-8"},
				{"NUL in a path", "GET", "/api/projects/a%00b", nil, nil, 400, "VALIDATION_ERROR"},
				{"a page past every offset", "GET", "/api/projects?page=9223372036854775807", nil, nil, 400, `"page"`},
				{"the last page allowed", "GET", "/api/projects?page=1000000", nil, nil, 200, `"total"`},
				{"NUL in a form field", "POST", "/api/knowledge/upload", nulForm, []string{"Content-Type", nulCT}, 400, `"title"`},
			}
			for _, tc := range tests {
				r := b.do(tc.Method, tc.URL, tok, tc.Body, tc.Headers...)
				if r.status != tc.WantStatus || !strings.Contains(r.raw, tc.WantContains) {
					t.Errorf("%s: %s %s = %d %s; want %d containing %q", tc.Name, tc.Method, tc.URL, r.status, r.raw, tc.WantStatus, tc.WantContains)
				}
				if r.status >= 400 && !strings.Contains(r.raw, `"success":false`) {
					t.Errorf("%s: error body %s is not the envelope", tc.Name, r.raw)
				}
			}
		})
	}
}
