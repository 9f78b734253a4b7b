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
	// No generator in this host: the cover, graphic's product, is not made, and the run fails with
	// the cover step's error instead of completing with the copy alone.
	_, body := e.do(u, "POST", "/api/generate/visual", map[string]any{"topic": "coffee"})
	final := e.wait(u, body["run_id"].(string), "failed", "completed")
	if fe, _ := final["error"].(map[string]any); final["status"] != "failed" || fe["code"] != "VIDEO_GEN_ERROR" || fe["step_id"] != "cover" || final["current_step"] != "cover" {
		t.Errorf("visual run without a generator = %v, want failed at the cover step with its VIDEO_GEN_ERROR", final)
	}
}

func TestBatchRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 100, nil)
	u, other := e.user("batch@example.com"), e.user("batch-other@example.com")
	st, body := e.do(u, "POST", "/api/batch/run", map[string]any{"workflow": "content_plan_workflow",
		"items": []any{map[string]any{"topic": "coffee"}, map[string]any{"inputs": map[string]any{"topic": "tea"}}, map[string]any{"duration": "long"}}})
	if st != 201 {
		t.Fatalf("batch/run = %d %v", st, body)
	}
	id, _ := body["batch_id"].(string)
	items, _ := body["items"].([]any)
	if id == "" || len(items) != 3 || items[2].(map[string]any)["status"] != "failed" || items[0].(map[string]any)["run_id"] == "" {
		t.Fatalf("batch/run = %v", body)
	}
	for _, it := range items[:2] {
		e.wait(u, it.(map[string]any)["run_id"].(string), "completed")
	}
	st, body = e.do(u, "GET", "/api/batch/"+id+"/status", nil)
	if st != 200 || body["status"] != "partial" || body["counts"].(map[string]any)["completed"] != float64(2) {
		t.Errorf("batch status = %d %v, want partial with 2 completed", st, body)
	}
	if st, body = e.do(other, "GET", "/api/batch/"+id+"/status", nil); st != 404 {
		t.Errorf("other's batch status = %d %v, want 404", st, body)
	}
	for name, tc := range map[string]struct {
		body map[string]any
		want int
	}{
		"no workflow":      {map[string]any{"items": []any{map[string]any{}}}, 400},
		"unknown workflow": {map[string]any{"workflow": "nope", "items": []any{map[string]any{}}}, 404},
		"no items":         {map[string]any{"workflow": "graphic"}, 400},
	} {
		if st, body := e.do(u, "POST", "/api/batch/run", tc.body); st != tc.want {
			t.Errorf("%s: batch/run = %d %v, want %d", name, st, body, tc.want)
		}
	}
}
