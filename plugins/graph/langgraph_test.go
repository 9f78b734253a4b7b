package graph_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reelforge/reelforge/internal/outbound"
	"github.com/reelforge/reelforge/plugins/graph"
	"github.com/reelforge/reelforge/plugins/graph/lgreplay"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/enginetest"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// lgDir holds the recorded exchanges of a stock LangGraph server (lgreplay).
const lgDir = "testdata/langgraph"

// The short drama's steps as manifests/short_drama.yaml has them (the render, after the graph).
var dramaSteps = []engine.Step{
	{ID: "research", Name: "Research", Agent: "kb_lookup", With: json.RawMessage(`{"top_k":5,"optional":true}`)},
	{ID: "write_episode", Name: "Write", Agent: "script_writer", DependsOn: []string{"research"}, With: json.RawMessage(`{"format":"drama"}`)},
	{ID: "polish", Name: "Polish", Agent: "rewriter", DependsOn: []string{"write_episode"}},
	{ID: "render", Name: "Render", Agent: "generator", DependsOn: []string{"polish"}, With: json.RawMessage(`{"job_type":"videogen","optional":true}`)},
	{ID: "assemble", Name: "Assemble", Agent: "assemble", DependsOn: []string{"polish", "render"}},
}

// lgScenario is one exchange of the engine with a LangGraph server, recorded into lgDir/<name>.json.
type lgScenario struct {
	name  string
	req   func() *engine.RunRequest
	check func(t *testing.T, res *engine.RunResult, err error, h *enginetest.RecordingHost, requests []lgreplay.Exchange)
}

func lgRequest(runID, workflow, assistant string, inputs map[string]any) *engine.RunRequest {
	set, _ := json.Marshal(map[string]string{"graph_id": workflow, "assistant_id": assistant})
	return &engine.RunRequest{RunID: runID, Workflow: engine.Workflow{ID: workflow, Engine: "graph", Settings: set, Timeout: time.Minute},
		Inputs: inputs, User: engine.UserContext{UserID: "u-1"}, Project: engine.ProjectContext{ProjectID: "p-1"}, Attempt: 1,
		Credential: lgCredential}
}

// lgCredential is the tool credential the scenarios' runs hand the graph; lgNote is what the
// owner's knowledge (lgHost) answers it. The graph live_script reads it in its research node.
const (
	lgCredential = "rft_replay-credential"
	lgNote       = "Grind medium-fine and pour in three slow circles."
)

// lgHost stands for the Reelforge host a graph calls back while the scenarios are recorded:
// POST /api/knowledge/context with the run's credential answers lgNote, anything else 401.
func lgHost(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/knowledge/context" || r.Header.Get("Authorization") != "Bearer "+lgCredential {
			http.Error(w, `{"error":{"code":"AUTHENTICATION_ERROR"}}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"success": true, "data": map[string]any{
			"context": "[#1] " + lgNote, "hits": []map[string]any{{"chunk_id": "c-1", "chunk_text": lgNote}}}})
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// postedRun is the body of the scenario's POST /threads/{id}/runs (nil when none was posted).
func postedRun(reqs []lgreplay.Exchange) map[string]any {
	var run map[string]any
	for _, r := range reqs {
		if r.Method == "POST" && r.Path == "/threads/"+lgreplay.ThreadToken+"/runs" {
			_ = json.Unmarshal(r.Request, &run)
		}
	}
	return run
}

var lgScenarios = []lgScenario{{
	name: "live_review",
	req: func() *engine.RunRequest {
		return lgRequest("run-lg-live", "live", "live_script", map[string]any{"topic": "pour-over coffee", "review": true})
	},
	check: func(t *testing.T, res *engine.RunResult, err error, h *enginetest.RecordingHost, reqs []lgreplay.Exchange) {
		if err != nil || res.Status != engine.StatusPaused || res.Awaiting == nil || res.Awaiting.StepID != "human_review" ||
			!strings.Contains(res.Awaiting.Prompt, "pour-over coffee") {
			t.Fatalf("Run() = %+v, %v; want paused at human_review with the interrupt's prompt", res, err)
		}
		steps := stepIDs(h)
		for _, want := range []string{"research", "write_rundown", graph.SummaryStepID} {
			if !steps[want] {
				t.Errorf("trace lacks the graph node %q: %v", want, steps)
			}
		}
		// While paused, the current step is the node that interrupted, at the progress reached.
		if pr := h.Progress(); len(pr) < 2 || pr[len(pr)-1].CurrentStep != "human_review" || pr[len(pr)-1].Progress < pr[len(pr)-2].Progress {
			t.Errorf("progress reports = %+v; want the last at human_review, not going back", pr)
		}
		// A node's step has its own start, never after its end (the stream tells only the end).
		for _, s := range h.Steps() {
			if s.Agent == "graph_node" && (s.StartedAt == nil || s.CompletedAt == nil || s.CompletedAt.Before(*s.StartedAt) || s.DurationMS == nil) {
				t.Errorf("node step %s: started %v, completed %v, duration %v; want a start no later than its end", s.StepID, s.StartedAt, s.CompletedAt, s.DurationMS)
			}
		}
		if reqs == nil {
			return // recording
		}
		run := postedRun(reqs)
		if in, _ := run["input"].(map[string]any); run["assistant_id"] != "live_script" || in["topic"] != "pour-over coffee" || run["command"] != nil {
			t.Errorf("run created with %v; want assistant live_script, the inputs as input, no command", run)
		}
		// The credential is in config.configurable under the key LangGraph keeps out of
		// checkpoints and traces, with the host's address; nowhere else in the request.
		cfg, _ := run["config"].(map[string]any)
		conf, _ := cfg["configurable"].(map[string]any)
		if conf[graph.ConfigToken] != lgCredential || conf[graph.ConfigHostURL] == nil || conf["reelforge_run_id"] != "run-lg-live" {
			t.Errorf("config.configurable = %v; want the run's metadata, %s and %s", conf, graph.ConfigHostURL, graph.ConfigToken)
		}
		for _, part := range []string{"input", "metadata"} {
			if b, _ := json.Marshal(run[part]); strings.Contains(string(b), lgCredential) {
				t.Errorf("the run's %s holds the credential: %s", part, b)
			}
		}
	},
}, {
	name: "live_resume",
	req: func() *engine.RunRequest {
		r := lgRequest("run-lg-live", "live", "live_script", map[string]any{"topic": "pour-over coffee", "review": true})
		r.ResumeInput = map[string]any{"feedback": "mention the bloom"}
		return r
	},
	check: func(t *testing.T, res *engine.RunResult, err error, h *enginetest.RecordingHost, reqs []lgreplay.Exchange) {
		script, _ := res.Outputs["script"].(string)
		if err != nil || res.Status != engine.StatusCompleted || !strings.Contains(script, "mention the bloom") {
			t.Fatalf("resumed Run() = %+v, %v; want completed with the feedback in the script", res, err)
		}
		if !strings.Contains(script, lgNote) || res.Outputs["notes_from"] != "knowledge base" {
			t.Errorf("script = %q (notes from %v); want the owner's note the graph read with the credential", script, res.Outputs["notes_from"])
		}
		if reqs == nil {
			return // recording
		}
		run := postedRun(reqs)
		cmd, _ := run["command"].(map[string]any)
		if resume, _ := cmd["resume"].(map[string]any); resume["feedback"] != "mention the bloom" || run["input"] != nil {
			t.Errorf("resume posted %v; want command.resume with the resume input and no input", run)
		}
	},
}, {
	name: "short_drama",
	req: func() *engine.RunRequest {
		r := lgRequest("run-lg-drama", "short_drama", "short_drama", map[string]any{"topic": "a lost letter", "characters": "Lin, Chen"})
		r.Workflow.Steps = dramaSteps
		return r
	},
	check: func(t *testing.T, res *engine.RunResult, err error, h *enginetest.RecordingHost, _ []lgreplay.Exchange) {
		if err != nil || res.Status != engine.StatusCompleted {
			t.Fatalf("Run() = %+v, %v; want completed", res, err)
		}
		jobs := h.Jobs()
		if len(jobs) != 1 || jobs[0].Type != engine.JobVideogen {
			t.Fatalf("jobs = %+v; want one videogen job after the graph", jobs)
		}
		var payload map[string]any
		_ = json.Unmarshal(jobs[0].Request, &payload)
		if s, _ := payload["script"].(string); !strings.Contains(s, "a lost letter") || !strings.Contains(s, "Lin:") {
			t.Errorf("the render job's script = %q; want the graph's episode", s)
		}
		render, _ := res.Outputs["render"].(map[string]any)
		if render["video_url"] != "/video.mp4" {
			t.Errorf("outputs = %v; want the render's video_url", res.Outputs)
		}
		if s, _ := res.Outputs["script"].(string); !strings.Contains(s, "a lost letter") {
			t.Errorf("script = %q; want the graph's", s)
		}
	},
}, {
	// The short drama's run again, as a host that took it up after the graph ended would: the
	// graph run on its thread did the work, so its outcome is adopted, no graph run is started,
	// and the render is made from its script.
	name: "short_drama_adopted",
	req: func() *engine.RunRequest {
		r := lgRequest("run-lg-drama", "short_drama", "short_drama", map[string]any{"topic": "a lost letter", "characters": "Lin, Chen"})
		r.Workflow.Steps = dramaSteps
		return r
	},
	check: func(t *testing.T, res *engine.RunResult, err error, h *enginetest.RecordingHost, reqs []lgreplay.Exchange) {
		if err != nil || res.Status != engine.StatusCompleted {
			t.Fatalf("Run() = %+v, %v; want completed", res, err)
		}
		if s, _ := res.Outputs["script"].(string); !strings.Contains(s, "a lost letter") {
			t.Errorf("script = %q; want the graph's", s)
		}
		if jobs := h.Jobs(); len(jobs) != 1 || jobs[0].Type != engine.JobVideogen {
			t.Errorf("jobs = %+v; want the render after the adopted graph run", jobs)
		}
		if reqs != nil && postedRun(reqs) != nil {
			t.Errorf("a graph run was posted: %v; want the ended one adopted", postedRun(reqs))
		}
	},
}, {
	name: "unknown_assistant",
	req: func() *engine.RunRequest {
		return lgRequest("run-lg-unknown", "live", "no_such_graph", map[string]any{"topic": "tea"})
	},
	check: func(t *testing.T, res *engine.RunResult, err error, _ *enginetest.RecordingHost, _ []lgreplay.Exchange) {
		if errcode.Of(err) != errcode.GraphRunner || !strings.Contains(err.Error(), "404") {
			t.Fatalf("Run() = %+v, %v; want GRAPH_RUNNER_ERROR with the server's 404 (the host degrades to node)", res, err)
		}
	},
}}

func stepIDs(h *enginetest.RecordingHost) map[string]bool {
	ids := map[string]bool{}
	for _, s := range h.Steps() {
		ids[s.StepID] = true
	}
	return ids
}

// renderJobs resolves every videogen job the engine creates with a video, as the generators
// plugin would, until ctx ends.
func renderJobs(ctx context.Context, h *enginetest.RecordingHost) {
	done := map[string]bool{}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, j := range h.Jobs() {
			if j.Type == engine.JobVideogen && !done[j.JobID] {
				done[j.JobID] = true
				_ = h.ResolveJob(j.JobID, engine.JobCompleted, []byte(`{"video_url":"/video.mp4"}`))
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func runScenario(t *testing.T, url string, sc lgScenario) (*engine.RunResult, *enginetest.RecordingHost, error) {
	t.Helper()
	eng, h := enginetest.New(t, graph.New(graph.Options{Tool: outbound.Tool{URL: url}, Protocol: graph.ProtocolLangGraph}))
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	go renderJobs(ctx, h)
	req := sc.req()
	req.CallbackURL = lgHost(t)
	res, err := eng.Run(ctx, nil, req)
	return res, h, err
}

// TestLangGraphReplay runs the engine against the recorded exchanges of a stock LangGraph server.
func TestLangGraphReplay(t *testing.T) {
	t.Parallel()
	for _, sc := range lgScenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			rec, err := lgreplay.Load(filepath.Join(lgDir, sc.name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			srv := lgreplay.NewServer(rec)
			hs := httptest.NewServer(srv)
			t.Cleanup(hs.Close)
			res, h, err := runScenario(t, hs.URL, sc)
			sc.check(t, res, err, h, srv.Requests())
			for _, p := range srv.Problems() {
				t.Error(p)
			}
		})
	}
}

// TestRecordLangGraph records lgScenarios from a LangGraph server serving integrations/langgraph
// (STEP_SECONDS=0): LANGGRAPH_RECORD_URL=http://127.0.0.1:2024 go test ./plugins/graph -run TestRecordLangGraph.
func TestRecordLangGraph(t *testing.T) {
	target := os.Getenv("LANGGRAPH_RECORD_URL")
	if target == "" {
		t.Skip("records from a LangGraph server: set LANGGRAPH_RECORD_URL")
	}
	for _, sc := range lgScenarios {
		rec := &lgreplay.Recorder{Target: strings.TrimRight(target, "/"), Thread: graph.ThreadID(sc.req().RunID)}
		hs := httptest.NewServer(rec)
		res, h, err := runScenario(t, hs.URL, sc)
		hs.Close()
		sc.check(t, res, err, h, nil)
		if err := rec.Save(filepath.Join(lgDir, sc.name+".json")); err != nil {
			t.Fatal(err)
		}
	}
}
