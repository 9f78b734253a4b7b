package node_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/reelforge/reelforge/host/manifest"
	"github.com/reelforge/reelforge/plugins/node"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

func newEngine() *node.Engine {
	return node.New(node.Options{RetryBackoff: time.Millisecond})
}

func run(t *testing.T, e *node.Engine, h *fakeHost, req *engine.RunRequest) *engine.RunResult {
	t.Helper()
	res, err := e.Run(t.Context(), h, req)
	if err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	return res
}

func TestTemplateScriptWithoutModel(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		format, platform, language string
		want                       []string
	}{
		"video":       {format: "video", platform: "douyin", want: []string{"[Hook]", "morning coffee", "[Beat 3]", "[Call to action]", "A calm pour-over routine.", "comments"}},
		"live":        {format: "live", platform: "bilibili", want: []string{"[Opening]", "[Segment 2]", "Like, coin and follow"}},
		"drama":       {format: "drama", want: []string{"[Cold open]", "[Cliffhanger]"}},
		"graphic":     {format: "graphic", platform: "xiaohongshu", want: []string{"[Title] Morning coffee", "Save this note"}},
		"music":       {format: "music", want: []string{"Mood:", "morning coffee"}},
		"plan":        {format: "plan", want: []string{"Day 1, Myth vs fact (video): Bust one myth about morning coffee", "Day 7,"}},
		"chinese cta": {format: "video", platform: "xiaohongshu", language: "zh", want: []string{"收藏这篇笔记"}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := &fakeHost{}
			req := request(step("write", "script_writer", `{"format":"`+tt.format+`"}`))
			req.Inputs["platform"] = tt.platform
			if tt.language != "" {
				req.Inputs["language"] = tt.language
			}
			res := run(t, newEngine(), h, req)
			if res.Status != engine.StatusCompleted {
				t.Fatalf("Run() status = %s (%+v), want completed", res.Status, res.Error)
			}
			script, _ := res.Outputs["script"].(string)
			for _, w := range tt.want {
				if !strings.Contains(script, w) {
					t.Errorf("script = %q, want it to contain %q", script, w)
				}
			}
			st := h.final()["write"]
			if st.Status != engine.StepCompleted || st.Outputs["source"] != "template" || st.Inputs["topic"] != "morning coffee" {
				t.Errorf("trace step = %+v", st)
			}
			if st.TokensUsed != nil {
				t.Errorf("template step reports tokens %d", *st.TokensUsed)
			}
		})
	}
}

func TestModelScriptReportsUsage(t *testing.T) {
	t.Parallel()
	h := &fakeHost{GenerateFunc: func(ctx context.Context, req *engine.GenerateRequest) (*engine.GenerateResult, error) {
		if strings.HasPrefix(req.Prompt, "Write") && !strings.Contains(req.Prompt, "morning coffee") {
			t.Errorf("prompt %q lacks the topic", req.Prompt)
		}
		return &engine.GenerateResult{OK: true, Text: "Hook! Beat. Beat. Beat. Follow!", TokensUsed: 120, CostUSD: 0.002, Model: "m1"}, nil
	}}
	res := run(t, newEngine(), h, request(step("write", "script_writer", ""), step("polish", "rewriter", "", "write")))
	if res.Status != engine.StatusCompleted || res.Outputs["script"] != "Hook! Beat. Beat. Beat. Follow!" {
		t.Fatalf("Run() = %+v", res)
	}
	st := h.final()["write"]
	if st.TokensUsed == nil || *st.TokensUsed != 120 || st.CostUSD == nil || *st.CostUSD != 0.002 {
		t.Errorf("trace step usage = %v, %v, want 120, 0.002", st.TokensUsed, st.CostUSD)
	}
	if st.StartedAt == nil || st.CompletedAt == nil || st.DurationMS == nil || st.Engine != "node" {
		t.Errorf("trace step lacks timings or engine: %+v", st)
	}
}

func TestDAGOrderAndConcurrencyBound(t *testing.T) {
	t.Parallel()
	var inFlight, peak atomic.Int32
	h := &fakeHost{}
	h.JobFunc = func(ctx context.Context, job *engine.Job) error {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
		job.Status = engine.JobCompleted
		job.Result = json.RawMessage(`{"video_url":"https://cdn.example/` + job.JobID + `"}`)
		return nil
	}
	steps := []engine.Step{step("write", "script_writer", "")}
	var gens []string
	for _, id := range []string{"g1", "g2", "g3", "g4", "g5"} {
		steps = append(steps, step(id, "generator", `{"job_type":"videogen"}`, "write"))
		gens = append(gens, id)
	}
	steps = append(steps, step("done", "assemble", "", gens...))
	e := node.New(node.Options{Concurrency: 2})
	res := run(t, e, h, request(steps...))
	if res.Status != engine.StatusCompleted {
		t.Fatalf("Run() = %+v", res.Error)
	}
	if p := peak.Load(); p != 2 {
		t.Errorf("peak concurrent steps = %d, want 2", p)
	}
	order := h.reported()
	pos := func(s string) int { return slices.Index(order, s) }
	if pos("write:completed") > pos("g1:running") || pos("done:running") < pos("g5:completed") {
		t.Errorf("trace order violates the DAG: %v", order)
	}
	// Every generator got the script written before it.
	for _, j := range h.jobs {
		var payload map[string]any
		if err := json.Unmarshal(j.Request, &payload); err != nil || !strings.Contains(payload["script"].(string), "[Hook]") {
			t.Errorf("job %s payload = %s, want the script", j.JobID, j.Request)
		}
	}
	if assets, _ := res.Outputs["assets"].(map[string]any); assets["video_url"] == nil {
		t.Errorf("outputs.assets = %v, want a video_url", res.Outputs["assets"])
	}
	if last := h.progress[len(h.progress)-1]; last != 100 {
		t.Errorf("last progress = %v, want 100", last)
	}
}

func TestReusesCompletedSteps(t *testing.T) {
	t.Parallel()
	h := &fakeHost{}
	req := request(step("write", "script_writer", ""), step("polish", "rewriter", `{"style":"formal"}`, "write"))
	req.Completed = map[string]json.RawMessage{"write": mustJSON(t, map[string]any{"script": "It is done. We are here."})}
	res := run(t, newEngine(), h, req)
	if res.Status != engine.StatusCompleted {
		t.Fatalf("Run() = %+v", res.Error)
	}
	if n := h.generateCalls.Load(); n != 1 { // the rewriter only
		t.Errorf("Generate calls = %d, want 1 (the completed step must not run again)", n)
	}
	if got := h.reported(); slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "write:") }) {
		t.Errorf("completed step reported again: %v", got)
	}
	if got, want := res.Outputs["script"], "It is done. We are here."; got != want {
		t.Errorf("outputs.script = %q, want %q", got, want)
	}
	if w, _ := res.Outputs["write"].(map[string]any); w["script"] != "It is done. We are here." {
		t.Errorf("outputs.write = %v, want the reused outputs", res.Outputs["write"])
	}
}

func TestRetries(t *testing.T) {
	t.Parallel()
	three, zero := 3, 0
	tests := map[string]struct {
		failures  int
		err       error
		retries   *int
		wantCalls int32
		wantOK    bool
		wantCode  string
	}{
		"recovers":           {failures: 2, err: errors.New("connection reset"), wantCalls: 3, wantOK: true},
		"gives up":           {failures: 5, err: errors.New("connection reset"), wantCalls: 3, wantCode: "AGENT_TOOL_FAILED"},
		"step override":      {failures: 3, err: errors.New("connection reset"), retries: &three, wantCalls: 4, wantOK: true},
		"step no retries":    {failures: 1, err: errors.New("connection reset"), retries: &zero, wantCalls: 1, wantCode: "AGENT_TOOL_FAILED"},
		"business not retry": {failures: 5, err: errcode.New(errcode.Validation, "bad query"), wantCalls: 1, wantCode: "VALIDATION_ERROR"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := &fakeHost{}
			h.SearchFunc = func(ctx context.Context, req *engine.SearchRequest) ([]engine.SearchHit, error) {
				if int(h.searchCalls.Load()) <= tt.failures {
					return nil, tt.err
				}
				return []engine.SearchHit{{ChunkID: "c1", ChunkText: "Grind the beans fresh.", SourceName: "coffee"}}, nil
			}
			s := step("lookup", "kb_lookup", "")
			s.Retries = tt.retries
			res := run(t, newEngine(), h, request(s))
			if got := h.searchCalls.Load(); got != tt.wantCalls {
				t.Errorf("Search calls = %d, want %d", got, tt.wantCalls)
			}
			if tt.wantOK {
				if res.Status != engine.StatusCompleted {
					t.Fatalf("Run() = %+v, want completed", res.Error)
				}
				return
			}
			if res.Status != engine.StatusFailed || res.Error == nil || res.Error.Code != tt.wantCode || res.Error.StepID != "lookup" {
				t.Fatalf("Run() = %+v %+v, want failed %s at lookup", res, res.Error, tt.wantCode)
			}
			if st := h.final()["lookup"]; st.Status != engine.StepFailed || st.Error == nil || st.Error.Code != tt.wantCode {
				t.Errorf("trace step = %+v", st)
			}
		})
	}
}

func TestHumanInputPausesThenResumes(t *testing.T) {
	t.Parallel()
	steps := []engine.Step{
		step("write", "script_writer", ""),
		step("review", "human_input", `{"prompt":"Approve the script?"}`, "write"),
		step("revise", "rewriter", "", "write", "review"),
	}
	e := newEngine()
	h := &fakeHost{}
	res := run(t, e, h, request(steps...))
	if res.Status != engine.StatusPaused || res.Awaiting == nil {
		t.Fatalf("Run() = %+v, want paused", res)
	}
	if diff := cmp.Diff(&engine.Awaiting{StepID: "review", Prompt: "Approve the script?"}, res.Awaiting); diff != "" {
		t.Errorf("Awaiting (-want +got):\n%s", diff)
	}
	fin := h.final()
	if fin["review"].Status != engine.StepPending || fin["review"].Inputs["prompt"] != "Approve the script?" {
		t.Errorf("review step = %+v, want pending with the prompt", fin["review"])
	}
	if _, ran := fin["revise"]; ran {
		t.Error("revise ran before the review")
	}

	// Resume: the host passes the completed step and the reviewer's input.
	h2 := &fakeHost{}
	req := request(steps...)
	req.Completed = map[string]json.RawMessage{"write": mustJSON(t, fin["write"].Outputs)}
	req.ResumeInput = map[string]any{"approved": true, "notes": "more energy", "style": "energetic"}
	res = run(t, e, h2, req)
	if res.Status != engine.StatusCompleted {
		t.Fatalf("resumed Run() = %+v", res)
	}
	fin2 := h2.final()
	if diff := cmp.Diff(req.ResumeInput, fin2["review"].Outputs); diff != "" || fin2["review"].Status != engine.StepCompleted {
		t.Errorf("review step = %+v; outputs (-want +got):\n%s", fin2["review"], diff)
	}
	if fin2["revise"].Inputs["style"] != "energetic" || fin2["revise"].Inputs["notes"] != "more energy" {
		t.Errorf("revise inputs = %v, want the reviewer's style and notes", fin2["revise"].Inputs)
	}
	if s, _ := res.Outputs["script"].(string); !strings.Contains(s, "!") {
		t.Errorf("revised script = %q, want exclamations of the energetic style", s)
	}
}

func TestOptionalGeneratorFailure(t *testing.T) {
	t.Parallel()
	failJob := func(ctx context.Context, job *engine.Job) error {
		job.Status = engine.JobFailed
		job.Error = &engine.RunError{Code: string(errcode.ExternalService), Message: "no video generator configured"}
		return nil
	}
	t.Run("optional is skipped", func(t *testing.T) {
		t.Parallel()
		h := &fakeHost{JobFunc: failJob}
		res := run(t, newEngine(), h, request(
			step("write", "script_writer", ""),
			step("render", "generator", `{"job_type":"videogen","optional":true}`, "write"),
			step("done", "assemble", "", "write", "render")))
		if res.Status != engine.StatusCompleted {
			t.Fatalf("Run() = %+v, want completed", res.Error)
		}
		st := h.final()["render"]
		if st.Status != engine.StepSkipped || st.Error == nil || !strings.Contains(st.Error.Message, "no video generator") {
			t.Errorf("render step = %+v, want skipped with the reason", st)
		}
		if sk, _ := res.Outputs["skipped"].([]any); len(sk) != 1 {
			t.Errorf("outputs.skipped = %v, want the render step", res.Outputs["skipped"])
		}
		if s, _ := res.Outputs["script"].(string); s == "" {
			t.Error("outputs lack the script")
		}
	})
	t.Run("required fails the run", func(t *testing.T) {
		t.Parallel()
		h := &fakeHost{JobFunc: func(ctx context.Context, job *engine.Job) error {
			job.Status = engine.JobFailed
			return nil
		}}
		res := run(t, newEngine(), h, request(
			step("write", "script_writer", ""),
			step("render", "generator", `{"job_type":"videogen"}`, "write"),
			step("done", "assemble", "", "render")))
		if res.Status != engine.StatusFailed || res.Error.Code != string(errcode.VideoGen) || res.Error.StepID != "render" {
			t.Fatalf("Run() = %+v %+v, want failed VIDEO_GEN_ERROR at render", res, res.Error)
		}
		if len(h.jobs) != 1 {
			t.Errorf("jobs = %d, want 1 (external failures are not retried by the step)", len(h.jobs))
		}
		if _, ran := h.final()["done"]; ran {
			t.Error("a step after the failed one ran")
		}
	})
	t.Run("job timeout", func(t *testing.T) {
		t.Parallel()
		h := &fakeHost{JobFunc: func(ctx context.Context, job *engine.Job) error {
			job.Status = engine.JobTimeout
			return nil
		}}
		res := run(t, newEngine(), h, request(step("speak", "generator", `{"job_type":"speech"}`)))
		if res.Status != engine.StatusFailed || res.Error.Code != string(errcode.WorkflowTimeout) {
			t.Fatalf("Run() = %+v, want failed WORKFLOW_TIMEOUT", res.Error)
		}
	})
}

func TestWhenInputSkips(t *testing.T) {
	t.Parallel()
	h := &fakeHost{}
	res := run(t, newEngine(), h, request(
		step("parse", "generator", `{"job_type":"videoparse","when_input":"url"}`),
		step("rewrite", "rewriter", "", "parse")))
	if res.Status != engine.StatusCompleted || len(h.jobs) != 0 {
		t.Fatalf("Run() = %+v with %d jobs, want completed without jobs", res.Error, len(h.jobs))
	}
	if st := h.final()["parse"]; st.Status != engine.StepSkipped {
		t.Errorf("parse step = %+v, want skipped", st)
	}
	if s, _ := res.Outputs["script"].(string); !strings.Contains(s, "pour-over") {
		t.Errorf("script = %q, want the rewritten summary", s)
	}
}

func TestCancellation(t *testing.T) {
	t.Parallel()
	block := func(ctx context.Context, job *engine.Job) error {
		<-ctx.Done()
		return ctx.Err()
	}
	tests := map[string]func(cancel context.CancelFunc, e *node.Engine){
		"context": func(cancel context.CancelFunc, e *node.Engine) { cancel() },
		"engine cancel": func(cancel context.CancelFunc, e *node.Engine) {
			_ = e.Cancel(context.Background(), &engine.CancelRequest{RunID: "run-1"})
		},
	}
	for name, stop := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			started := make(chan struct{})
			h := &fakeHost{JobFunc: func(ctx context.Context, job *engine.Job) error {
				close(started)
				return block(ctx, job)
			}}
			e := newEngine()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := e.Run(ctx, h, request(step("render", "generator", `{"job_type":"videogen"}`)))
				done <- err
			}()
			<-started
			stop(cancel, e)
			select {
			case err := <-done:
				if !errcode.Is(err, errcode.WorkflowCancelled) {
					t.Errorf("Run() error = %v, want WORKFLOW_CANCELLED", err)
				}
			case <-time.After(2 * time.Second):
				t.Fatal("Run() did not return within 2s of the cancellation")
			}
			if st := h.final()["render"]; st.Status != engine.StepFailed || st.Error.Code != string(errcode.WorkflowCancelled) {
				t.Errorf("render step = %+v, want failed WORKFLOW_CANCELLED", st)
			}
		})
	}
}

func TestWorkflowTimeout(t *testing.T) {
	t.Parallel()
	h := &fakeHost{JobFunc: func(ctx context.Context, job *engine.Job) error {
		<-ctx.Done()
		return ctx.Err()
	}}
	req := request(step("render", "generator", `{"job_type":"videogen","optional":true}`))
	req.Workflow.Timeout = 30 * time.Millisecond
	res := run(t, newEngine(), h, req)
	if res.Status != engine.StatusFailed || res.Error.Code != string(errcode.WorkflowTimeout) {
		t.Fatalf("Run() = %+v, want failed WORKFLOW_TIMEOUT", res.Error)
	}
}

func TestDegradedIsRecorded(t *testing.T) {
	t.Parallel()
	h := &fakeHost{}
	req := request(step("write", "script_writer", ""))
	req.Degraded = "graph engine unavailable"
	run(t, newEngine(), h, req)
	for _, s := range h.steps {
		if s.Engine != "node" || s.Degraded != "graph engine unavailable" {
			t.Errorf("trace step %s engine %q degraded %q", s.StepID, s.Engine, s.Degraded)
		}
	}
}

func TestInvalidWorkflow(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		steps []engine.Step
		code  errcode.Code
	}{
		"no steps":      {code: errcode.WorkflowInvalidState},
		"unknown agent": {steps: []engine.Step{step("a", "poet", "")}, code: errcode.AgentNotFound},
		"unknown dep":   {steps: []engine.Step{step("a", "assemble", "", "x")}, code: errcode.Validation},
		"cycle":         {steps: []engine.Step{step("a", "assemble", "", "b"), step("b", "assemble", "", "a")}, code: errcode.Validation},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res := run(t, newEngine(), &fakeHost{}, request(tt.steps...))
			if res.Status != engine.StatusFailed || res.Error.Code != string(tt.code) {
				t.Errorf("Run() = %+v, want failed %s", res.Error, tt.code)
			}
		})
	}
}

func TestKnowledgeAnswer(t *testing.T) {
	t.Parallel()
	h := &fakeHost{SearchFunc: func(ctx context.Context, req *engine.SearchRequest) ([]engine.SearchHit, error) {
		if req.UserID != "u-1" || req.ProjectID != "p-1" || req.Query != "how hot should the water be?" {
			t.Errorf("Search(%+v), want the run's user, project and question", req)
		}
		return []engine.SearchHit{{ChunkID: "c1", ChunkText: "Use water at 92 to 96 degrees. Pour in circles.", SourceName: "coffee-guide", Document: "brewing.md"}}, nil
	}}
	req := request(step("lookup", "kb_lookup", ""), step("reply", "answer", "", "lookup"))
	req.Inputs["question"] = "how hot should the water be?"
	res := run(t, newEngine(), h, req)
	if a, _ := res.Outputs["answer"].(string); !strings.Contains(a, "92 to 96") || !strings.Contains(a, "#1") {
		t.Errorf("answer = %q, want the cited fact", a)
	}
	if c, _ := res.Outputs["citations"].([]any); len(c) != 1 {
		t.Errorf("citations = %v, want one", res.Outputs["citations"])
	}

	// A question the passage does not answer: the lookup finds the passage, but the host's grounding
	// search (the rule of /api/knowledge/ask, host/app's tests) keeps none of it, so the answer step
	// has no citable basis and cites nothing.
	req.Inputs["question"] = "What is the capital of France?"
	var grounded atomic.Int32
	h.SearchFunc = func(ctx context.Context, req *engine.SearchRequest) ([]engine.SearchHit, error) {
		if req.Ground {
			grounded.Add(1)
			return nil, nil
		}
		return []engine.SearchHit{{ChunkID: "c1", ChunkText: "Use water at 92 to 96 degrees. What matters is the grind.", SourceName: "coffee-guide"}}, nil
	}
	res = run(t, newEngine(), h, req)
	if a, _ := res.Outputs["answer"].(string); !strings.HasPrefix(a, "No citable basis") || len(res.Outputs["citations"].([]any)) != 0 {
		t.Errorf("answer = %q, citations %v; want no basis and none", a, res.Outputs["citations"])
	}
	if grounded.Load() != 1 {
		t.Errorf("the answer step asked the host to ground its passages %d times; want once", grounded.Load())
	}

	// A lookup that grounded its hits for the question (kb_chat's, with: {ground: true}) is not
	// searched again.
	grounded.Store(0)
	req = request(engine.Step{ID: "lookup", Agent: "kb_lookup", With: json.RawMessage(`{"ground": true}`)}, step("reply", "answer", "", "lookup"))
	req.Inputs["question"] = "What is the capital of France?"
	res = run(t, newEngine(), h, req)
	if a, _ := res.Outputs["answer"].(string); !strings.HasPrefix(a, "No citable basis") || grounded.Load() != 1 {
		t.Errorf("answer = %q after %d grounding searches; want no basis after one", a, grounded.Load())
	}
}

func TestInfoAndHealth(t *testing.T) {
	t.Parallel()
	e := newEngine()
	info, err := e.Info(t.Context())
	if err != nil || info.Name != "node" || info.APIVersion != 1 {
		t.Errorf("Info() = %+v, %v", info, err)
	}
	if err := e.Health(t.Context()); err != nil {
		t.Errorf("Health() = %v", err)
	}
	if _, err := e.Callback(t.Context(), &fakeHost{}, &engine.CallbackRequest{}); !errcode.Is(err, errcode.WorkflowInvalidState) {
		t.Errorf("Callback() error = %v, want WORKFLOW_INVALID_STATE", err)
	}
}

// TestShippedManifests runs the node steps of every manifest in manifests/ with what the scheduler
// sends: each completes (script_review pauses), with generators present and with generators absent
// for the workflows whose generator steps are optional.
func TestShippedManifests(t *testing.T) {
	t.Parallel()
	reg, err := manifest.Load(filepath.Join("..", "..", "manifests"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range reg.List() {
		for _, agent := range m.Steps {
			if !slices.Contains(node.Agents(), agent.Agent) {
				t.Errorf("%s: agent %q unknown to the node engine", m.ID, agent.Agent)
			}
		}
		t.Run(m.ID, func(t *testing.T) {
			t.Parallel()
			req := &engine.RunRequest{RunID: "r", Workflow: m.Workflow(), Attempt: 1,
				Inputs: map[string]any{"summary": "a 15 second video about a morning coffee routine", "platform": "douyin"}}
			res := run(t, newEngine(), &fakeHost{}, req)
			want := engine.StatusCompleted
			if m.ID == "script_review" {
				want = engine.StatusPaused
			}
			if res.Status != want {
				t.Fatalf("Run() = %s %+v, want %s", res.Status, res.Error, want)
			}
			if want == engine.StatusCompleted && res.Outputs["script"] == nil && res.Outputs["answer"] == nil {
				t.Errorf("outputs have neither script nor answer: %v", res.Outputs)
			}
		})
	}
	for _, id := range []string{"voiceover", "graphic", "video", "voiceover_video", "short_drama", "content_repurposing"} {
		t.Run(id+" without generators", func(t *testing.T) {
			t.Parallel()
			m, _ := reg.Get(id)
			h := &fakeHost{JobFunc: func(ctx context.Context, job *engine.Job) error {
				job.Status = engine.JobFailed
				job.Error = &engine.RunError{Code: "EXTERNAL_SERVICE_ERROR", Message: "no generator"}
				return nil
			}}
			req := &engine.RunRequest{RunID: "r", Workflow: m.Workflow(), Attempt: 1,
				Inputs: map[string]any{"topic": "coffee", "summary": "coffee at home", "platform": "douyin", "url": "https://v.example/1"}}
			if res := run(t, newEngine(), h, req); res.Status != engine.StatusCompleted {
				t.Fatalf("Run() = %+v, want completed", res.Error)
			}
		})
	}
}
