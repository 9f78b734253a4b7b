package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/api"
	"github.com/reelforge/reelforge/host/auth"
	"github.com/reelforge/reelforge/host/config"
	"github.com/reelforge/reelforge/host/launch"
	"github.com/reelforge/reelforge/host/scheduler"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/sqlitestore"
	"github.com/reelforge/reelforge/host/store/storetest"
	"github.com/reelforge/reelforge/host/tasks"
)

// schedRunner is a launch.Runner that only records.
type schedRunner struct {
	mu sync.Mutex
	n  int
}

func (r *schedRunner) Start(context.Context, launch.Params) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	return uuid.NewString(), nil
}

func (*schedRunner) Check(context.Context, string, map[string]any) error { return nil }

func (r *schedRunner) Cancel(context.Context, string) error { return nil }

type schedEnv struct {
	srv    *api.Server
	st     store.Driver
	tokens map[string]string // name -> bearer token
	ids    map[string]string // name -> user id
}

func newSchedEnv(t *testing.T) *schedEnv {
	t.Helper()
	st, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "api.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg := config.Defaults()
	cfg.JWTSecret = "test-secret-test-secret-test-secret"
	a := auth.New(st, cfg.JWTSecret, 4)
	r := &schedRunner{}
	srv := &api.Server{Config: &cfg, Store: st, Auth: a, Log: slog.New(slog.DiscardHandler),
		Tasks:     tasks.New(st, tasks.Options{}),
		Scheduler: scheduler.New(st, scheduler.Options{Runner: r})}
	e := &schedEnv{srv: srv, st: st, tokens: map[string]string{}, ids: map[string]string{}}
	for _, name := range []string{"owner", "other"} {
		u := storetest.NewUser(t, st, store.RoleUser)
		tok, err := a.IssueAccess(u)
		if err != nil {
			t.Fatal(err)
		}
		e.tokens[name], e.ids[name] = tok, u.ID
	}
	return e
}

func TestSchedulerAndTaskRoutes(t *testing.T) {
	t.Parallel()
	e := newSchedEnv(t)
	app := e.srv.App()
	own := storetest.NewProject(t, e.st, e.ids["owner"])
	foreign := storetest.NewProject(t, e.st, e.ids["other"])
	bp := json.RawMessage(`{"tasks":[{"id":"s1","date":"2020-01-01","workflow_id":"music","summary":"old","platform":"douyin","priority":"low"},
		{"id":"s2","date":"2020-01-02","workflow_id":"video","summary":"new","priority":"high"},{"id":"s3","date":"2999-01-01"}]}`)
	for _, p := range []*store.Project{own, foreign} {
		if err := scheduler.SyncBlueprint(context.Background(), e.st, p.ID, bp); err != nil {
			t.Fatal(err)
		}
	}
	var taskID string
	tests := []struct {
		Name, As, Method, URL, Body string
		WantStatus                  int
		WantContains                []string
		Save                        func(body map[string]any)
	}{
		{"status", "owner", "GET", "/api/scheduler/status", "", 200,
			[]string{`"interval_ms":900000`, `"max_projects_per_tick":10`, `"valid_workflows":["voiceover"`, `"fallback_active":false`}, nil},
		{"pending, own projects only, by priority", "owner", "GET", "/api/scheduler/pending-tasks?limit=5", "", 200,
			[]string{`"count":2`, `"strategy_task_id":"s2"`, `"task_due_date":"2020-01-02"`, `"inputs":{"platform":"douyin","summary":"old"}`, own.Name}, nil},
		{"pending, bad limit", "owner", "GET", "/api/scheduler/pending-tasks?limit=500", "", 400, []string{"VALIDATION_ERROR"}, nil},
		{"trigger", "owner", "POST", "/api/scheduler/trigger", `{"workflow_id":"video","project_id":"` + own.ID + `","strategy_task_id":"s2","inputs":{"summary":"x"}}`, 200,
			[]string{`"status":"running"`, `"run_id":"`, `"triggered_at":"`}, nil},
		{"trigger again: already running", "owner", "POST", "/api/scheduler/trigger", `{"workflow_id":"video","project_id":"` + own.ID + `","strategy_task_id":"s2"}`, 409,
			[]string{"WORKFLOW_ALREADY_RUNNING"}, nil},
		{"pending after trigger", "owner", "GET", "/api/scheduler/pending-tasks", "", 200, []string{`"count":1`, `"strategy_task_id":"s1"`}, nil},
		{"trigger unknown workflow", "owner", "POST", "/api/scheduler/trigger", `{"workflow_id":"nope","project_id":"` + own.ID + `"}`, 404, []string{"WORKFLOW_NOT_FOUND"}, nil},
		{"trigger another user's project", "owner", "POST", "/api/scheduler/trigger", `{"workflow_id":"video","project_id":"` + foreign.ID + `"}`, 403, []string{"Forbidden: project not accessible"}, nil},
		{"trigger without project", "owner", "POST", "/api/scheduler/trigger", `{"workflow_id":"video"}`, 400, []string{"project_id"}, nil},
		{"trigger without workflow", "owner", "POST", "/api/scheduler/trigger", `{"project_id":"` + own.ID + `"}`, 400, []string{"workflow_id"}, nil},
		{"trigger without token", "", "POST", "/api/scheduler/trigger", `{}`, 401, []string{"AUTHENTICATION_ERROR"}, nil},
		{"dispatch", "owner", "POST", "/api/project/dispatch-task", `{"projectId":"` + own.ID + `","type":"video","inputParams":{"prompt":"p"}}`, 201,
			[]string{`"status":"pending"`, `"type":"video"`}, func(b map[string]any) { taskID = b["task"].(map[string]any)["id"].(string) }},
		{"create via /api/tasks", "owner", "POST", "/api/tasks", `{"projectId":"` + own.ID + `","type":"music"}`, 201, []string{`"status":"pending"`}, nil},
		{"dispatch without type", "owner", "POST", "/api/project/dispatch-task", `{"projectId":"` + own.ID + `"}`, 400, []string{"type"}, nil},
		{"dispatch without project", "owner", "POST", "/api/project/dispatch-task", `{"type":"video"}`, 400, []string{"projectId"}, nil},
		{"dispatch to another user's project", "owner", "POST", "/api/project/dispatch-task", `{"projectId":"` + foreign.ID + `","type":"video"}`, 403, []string{"AUTHORIZATION_ERROR"}, nil},
		{"cancel by another user", "other", "POST", "/api/tasks/{task}/cancel", "", 404, []string{"NOT_FOUND"}, nil},
		{"cancel", "owner", "POST", "/api/tasks/{task}/cancel", "", 200, []string{`"status":"cancelled"`}, nil},
		{"cancel twice", "owner", "POST", "/api/tasks/{task}/cancel", "", 409, []string{"WORKFLOW_INVALID_STATE"}, nil},
		{"cancel unknown", "owner", "POST", "/api/tasks/" + uuid.NewString() + "/cancel", "", 404, []string{"NOT_FOUND"}, nil},
		{"project tasks", "owner", "GET", "/api/projects/" + own.ID + "/tasks", "", 200, []string{`"status":"cancelled"`, `"type":"music"`}, nil},
		{"blueprint through the project", "owner", "PUT", "/api/projects/" + own.ID, `{"blueprint":{"tasks":[{"id":"n1","date":"2020-05-05","priority":"medium"}]}}`, 200, nil, nil},
		{"health shows the fallback", "", "GET", "/health", "", 200, []string{`"fallback_active":false`, `"mode":"automation_managed"`}, nil}, // /health's scheduler, in whatever key order
		{"pending after a new blueprint", "owner", "GET", "/api/scheduler/pending-tasks", "", 200, []string{`"count":1`, `"strategy_task_id":"n1"`}, nil},
	}
	for _, tc := range tests { // in order: later rows build on earlier ones
		url := strings.ReplaceAll(tc.URL, "{task}", taskID)
		req := httptest.NewRequest(tc.Method, url, strings.NewReader(tc.Body))
		req.Header.Set("Content-Type", "application/json")
		if tc.As != "" {
			req.Header.Set("Authorization", "Bearer "+e.tokens[tc.As])
		}
		res, err := testApp(t, app, req)
		if err != nil {
			t.Fatalf("%s: %v", tc.Name, err)
		}
		raw, _ := io.ReadAll(res.Body)
		body := string(raw)
		if res.StatusCode != tc.WantStatus {
			t.Errorf("%s: %s %s = %d %s, want %d", tc.Name, tc.Method, url, res.StatusCode, body, tc.WantStatus)
			continue
		}
		for _, want := range tc.WantContains {
			if !strings.Contains(body, want) {
				t.Errorf("%s: body %s lacks %s", tc.Name, body, want)
			}
		}
		if tc.Save != nil {
			var m map[string]any
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatalf("%s: %v", tc.Name, err)
			}
			tc.Save(m)
		}
	}
}

// TestConcurrentBlueprintSaves: a project's blueprint saved several times at once (a double
// submit) answers 200 to each save, and the blueprint the project keeps is the one its strategy
// tasks are made of.
func TestConcurrentBlueprintSaves(t *testing.T) {
	for _, d := range drivers() {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, d.open)
			tok, _ := b.user("saver")
			pid := b.project(tok, "race")
			const n = 6
			for round := range 8 {
				status := make([]int, n)
				bodies := make([]string, n)
				storetest.Together(n, func(i int) {
					body := fmt.Sprintf(`{"blueprint":{"tasks":[{"id":"r%d-s%d-a","date":"2026-01-01"},{"id":"r%d-s%d-b","date":"2026-01-02"}]}}`,
						round, i, round, i)
					req := httptest.NewRequest("PUT", "/api/projects/"+pid, strings.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Authorization", "Bearer "+tok)
					res, err := testApp(t, b.app, req)
					if err != nil {
						bodies[i] = err.Error()
						return
					}
					raw, _ := io.ReadAll(res.Body)
					status[i], bodies[i] = res.StatusCode, string(raw)
				})
				for i := range n {
					if status[i] != 200 {
						t.Fatalf("round %d: concurrent PUT = %d %s, want 200", round, status[i], bodies[i])
					}
				}
				r := b.do("GET", "/api/projects/"+pid, tok, nil)
				var kept []string
				bp, _ := r.data("project").(map[string]any)["blueprint"].(map[string]any)
				for _, x := range bp["tasks"].([]any) {
					kept = append(kept, x.(map[string]any)["id"].(string))
				}
				got, err := b.st.ListStrategyTasks(context.Background(), pid)
				if err != nil {
					t.Fatal(err)
				}
				var scheduled []string
				for _, st := range got {
					scheduled = append(scheduled, st.TaskID)
				}
				if strings.Join(kept, ",") != strings.Join(scheduled, ",") {
					t.Fatalf("round %d: the project keeps the blueprint of %v but its strategy tasks are %v", round, kept, scheduled)
				}
			}
		})
	}
}
