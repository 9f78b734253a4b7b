package api_test

import (
	"testing"
)

func TestNamedRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 100, nil)
	u, other := e.user("named@example.com"), e.user("named-other@example.com")
	_, pb := e.do(other, "POST", "/api/projects", map[string]any{"name": "theirs"})
	theirs := pb["project"].(map[string]any)["id"].(string)
	tests := map[string]struct {
		path     string
		body     map[string]any
		want     int
		workflow string
		code     string
	}{
		"visual":                {"/api/generate/visual", map[string]any{"topic": "coffee"}, 200, "graphic", ""},
		"visual with inputs":    {"/api/generate/visual", map[string]any{"inputs": map[string]any{"topic": "tea"}}, 200, "graphic", ""},
		"voiceover":             {"/api/voiceover/generate", map[string]any{"topic": "coffee", "language": "en"}, 200, "voiceover", ""},
		"script":                {"/api/generate/script", map[string]any{"topic": "coffee"}, 200, "script_review", ""},
		"langgraph":             {"/api/langgraph/run", map[string]any{"workflow": "live", "inputs": map[string]any{"topic": "coffee"}}, 200, "live", ""},
		"langgraph node":        {"/api/langgraph/run", map[string]any{"workflow": "graphic"}, 400, "", "VALIDATION_ERROR"},
		"langgraph unknown":     {"/api/langgraph/run", map[string]any{"workflow": "nope"}, 404, "", "WORKFLOW_NOT_FOUND"},
		"langgraph no workflow": {"/api/langgraph/run", map[string]any{}, 400, "", "VALIDATION_ERROR"},
		"bad input type":        {"/api/generate/visual", map[string]any{"duration": "long"}, 400, "", "VALIDATION_ERROR"},
		"other's project":       {"/api/generate/visual", map[string]any{"topic": "x", "project_id": theirs}, 403, "", "AUTHORIZATION_ERROR"},
	}
	for name, tc := range tests {
		st, body := e.do(u, "POST", tc.path, tc.body)
		if st != tc.want || errCode(body) != tc.code || (tc.workflow != "" && body["workflow"] != tc.workflow) {
			t.Errorf("%s: POST %s = %d %v, want %d %q %q", name, tc.path, st, body, tc.want, tc.code, tc.workflow)
		}
		if st == 200 {
			if id, _ := body["run_id"].(string); id == "" {
				t.Errorf("%s: no run_id: %v", name, body)
			}
		}
	}
	_, body := e.do(u, "POST", "/api/generate/visual", map[string]any{"topic": "coffee"})
	e.wait(u, body["run_id"].(string), "completed")
}
