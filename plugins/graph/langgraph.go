package graph

// The LangGraph Platform protocol (RUNNER_PROTOCOL=langgraph): the engine drives a stock LangGraph
// server (`langgraphjs dev`, `langgraph up`, a LangSmith deployment) through its own API, as
// @langchain/langgraph-api 1.5 serves it:
//
//   - POST /threads {thread_id, if_exists: do_nothing, metadata}: one thread a Reelforge run, its id
//     derived from the run's id (threadID), so a resume, a recovery after a host restart and Cancel
//     find it again without the engine keeping anything;
//   - GET /threads/{id}/runs?limit=100: the graph runs already on the thread (begin);
//   - POST /threads/{id}/runs {assistant_id, input | command: {resume}, stream_mode: [updates],
//     stream_resumable: true, config.configurable, metadata}: the run's inputs are the graph's
//     input state; a resume sends the run's resume input as command.resume (what the graph's
//     interrupt() returns);
//   - GET /threads/{id}/runs/{run_id}/stream with Last-Event-ID: -1: every node's update, from the
//     first (the run is resumable), each reported as a trace step when it arrives; the stream ends
//     with the run;
//   - GET /threads/{id}/runs/{run_id} (its status: success, error, interrupted, timeout) and
//     GET /threads/{id}/state (values, next, tasks[].interrupts): the final state is the run's
//     outputs; a task with interrupts pauses the run at that node, its interrupt value's `prompt`
//     the prompt;
//   - POST /threads/{id}/runs/{run_id}/cancel: when the run is cancelled;
//   - GET /ok: the health route.
//
// Why the engine waits on the run itself instead of a webhook: the server's webhook is sent only
// when a run ends, unsigned, and says nothing while a long graph works (the host would time the job
// out); the stream tells each node as it ends and needs no route on the host. The Run call holds
// its executor slot while the graph works; the workflow's timeout bounds it. Each execution first
// looks at the graph runs already on its thread (begin): a run taken up again (its host stopped)
// joins the graph run still in flight or takes the outcome of the one that ended, a retry goes on
// from the thread's last checkpoint, so no graph run is started while another may still run.
//
// The graph gets the host's address and the run's tool credential in config.configurable
// (ConfigHostURL, ConfigToken) to read the owner's knowledge; never in metadata or the input.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/internal/outbound"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// Protocols of the runner (the entry's `protocol` setting, RUNNER_PROTOCOL).
const (
	// ProtocolReelforge is the project's own: POST {RUNNER_URL}/run, then signed graph-callbacks.
	ProtocolReelforge = "reelforge"
	// ProtocolLangGraph is the LangGraph Platform API of a stock LangGraph server.
	ProtocolLangGraph = "langgraph"
)

// LangGraphHealthPath is a LangGraph server's health route.
const LangGraphHealthPath = "/ok"

// threadNamespace makes a run's thread id: uuid v5 of the run id in it.
var threadNamespace = uuid.MustParse("5b3f6c1e-7a2d-4f0b-9c8e-2d1a0f6e4b7c")

// ThreadID is the LangGraph thread of Reelforge run runID: the same every time, so a resume, a
// recovery and Cancel reach the run's thread without any state kept by the engine.
func ThreadID(runID string) string {
	return uuid.NewSHA1(threadNamespace, []byte("reelforge-run:"+runID)).String()
}

// lgRun is the part of a LangGraph Run object the engine reads.
type lgRun struct {
	RunID     string `json:"run_id"`
	Status    string `json:"status"` // pending, running, error, success, timeout, interrupted
	CreatedAt string `json:"created_at"`
}

// lgState is the part of a thread state (GET /threads/{id}/state) the engine reads.
type lgState struct {
	Values map[string]any `json:"values"`
	Next   []string       `json:"next"`
	Tasks  []struct {
		ID         string `json:"id"`
		Name       string `json:"name"`
		Error      string `json:"error"`
		Interrupts []struct {
			ID    string `json:"id"`
			Value any    `json:"value"`
		} `json:"interrupts"`
	} `json:"tasks"`
}

// runLangGraph runs req's graph on the LangGraph server until it ends or pauses. See the top of
// this file.
func (e *Engine) runLangGraph(ctx context.Context, h engine.Host, req *engine.RunRequest, set settings) (*engine.RunResult, error) {
	assistant := set.AssistantID
	if assistant == "" {
		assistant = set.GraphID
	}
	tid := ThreadID(req.RunID)
	now := e.opts.Now().UTC()
	summary := engine.TraceStep{StepID: SummaryStepID, StepName: "LangGraph run", Agent: "graph_runner",
		Status: engine.StepRunning, Engine: Name, StartedAt: &now,
		Inputs: map[string]any{"assistant_id": assistant, "thread_id": tid, "protocol": ProtocolLangGraph}}
	refused := func(what string, err error) (*engine.RunResult, error) {
		if ctx.Err() != nil {
			return nil, errcode.E("graph.langgraph", errcode.WorkflowCancelled, "the run was cancelled", ctx.Err())
		}
		e.opts.Logger.Warn("langgraph server refused", "run_id", req.RunID, "what", what, "error", err)
		end := e.opts.Now().UTC()
		summary.Status, summary.CompletedAt = engine.StepFailed, &end
		summary.Error = &engine.StepError{Code: string(errcode.GraphRunner), Message: fmt.Sprintf("the LangGraph server refused to %s: %v", what, err)}
		e.report(ctx, h, req.RunID, summary)
		return nil, errcode.E("graph.langgraph", errcode.GraphRunner, fmt.Sprintf("the LangGraph server refused to %s: %v", what, err), err)
	}

	meta := map[string]any{"reelforge_run_id": req.RunID, "workflow_id": req.Workflow.ID,
		"user_id": req.User.UserID, "project_id": req.Project.ProjectID}
	if err := e.lgCall(ctx, http.MethodPost, "/threads", map[string]any{"thread_id": tid, "if_exists": "do_nothing", "metadata": meta}, nil); err != nil {
		return refused("create the thread", err)
	}
	run, how, err := e.begin(ctx, tid, req)
	if err != nil {
		return refused("prepare the run", err)
	}
	if how != lgAdopt && how != lgJoin {
		body := map[string]any{"assistant_id": assistant, "stream_mode": []string{"updates"}, "stream_resumable": true,
			"multitask_strategy": "reject", "metadata": meta, "config": map[string]any{"configurable": e.configurable(req, meta)}}
		switch how {
		case lgResume:
			body["command"] = map[string]any{"resume": req.ResumeInput}
		case lgContinue:
			body["input"] = nil // from the thread's last checkpoint: the failed node again, the others kept
		default:
			body["input"] = req.MergedInputs()
		}
		if err := e.lgCall(ctx, http.MethodPost, "/threads/"+tid+"/runs", body, &run); err != nil {
			return refused("start the run", err)
		}
	}
	summary.Inputs["start"] = how
	summary.Inputs["langgraph_run_id"] = run.RunID
	e.report(ctx, h, req.RunID, summary)
	if err := h.ReportProgress(ctx, req.RunID, 10, SummaryStepID); err != nil {
		e.opts.Logger.Warn("host refused the progress", "run_id", req.RunID, "error", err)
	}

	streamErr, progress := "", 10.0
	if how != lgAdopt {
		streamErr, err = e.follow(ctx, h, req.RunID, tid, run.RunID, &progress)
	}
	if ctx.Err() != nil {
		e.lgCancel(tid, run.RunID)
		return nil, errcode.E("graph.langgraph", errcode.WorkflowCancelled, "the run was cancelled", ctx.Err())
	}
	if err != nil {
		return refused("follow the run", err)
	}
	if err := e.lgCall(ctx, http.MethodGet, "/threads/"+tid+"/runs/"+run.RunID, nil, &run); err != nil {
		return refused("report the run", err)
	}
	var st lgState
	if err := e.lgCall(ctx, http.MethodGet, "/threads/"+tid+"/state", nil, &st); err != nil {
		return refused("report the thread's state", err)
	}
	end := e.opts.Now().UTC()
	summary.CompletedAt = &end
	summary.Outputs = map[string]any{"status": run.Status, "next": st.Next}
	switch {
	case run.Status == "success" && interrupted(st) != nil:
		aw := interrupted(st)
		summary.Status, summary.CompletedAt = engine.StepPending, nil
		e.report(ctx, h, req.RunID, summary)
		// The run waits at the node that interrupted, which never reported an update: it is the
		// current step (as a node run's human step is), not the node before it.
		if err := h.ReportProgress(ctx, req.RunID, progress, aw.StepID); err != nil {
			e.opts.Logger.Warn("host refused the progress", "run_id", req.RunID, "error", err)
		}
		return &engine.RunResult{Status: engine.StatusPaused, Outputs: st.Values, Awaiting: aw}, nil
	case run.Status == "success":
		summary.Status = engine.StepCompleted
		e.report(ctx, h, req.RunID, summary)
		out := st.Values
		if out == nil {
			out = map[string]any{}
		}
		return &engine.RunResult{Status: engine.StatusCompleted, Outputs: out}, nil
	default:
		msg := fmt.Sprintf("the LangGraph run ended %s", run.Status)
		if streamErr != "" {
			msg += ": " + streamErr
		}
		for _, t := range st.Tasks {
			if t.Error != "" {
				msg = fmt.Sprintf("the LangGraph run ended %s at node %s: %s", run.Status, t.Name, taskError(t.Error))
				break
			}
		}
		summary.Status = engine.StepFailed
		summary.Error = &engine.StepError{Code: string(errcode.AgentExecutionFailed), Message: msg}
		e.report(ctx, h, req.RunID, summary)
		return &engine.RunResult{Status: engine.StatusFailed, Error: &engine.RunError{Code: string(errcode.AgentExecutionFailed), Message: msg, StepID: SummaryStepID}}, nil
	}
}

// How an execution of a Reelforge run meets the graph runs already on its thread (begin).
const (
	lgStart    = "start"    // none yet: a new graph run with the run's inputs
	lgJoin     = "join"     // one is in flight (the host that started it stopped): follow it
	lgAdopt    = "adopt"    // the latest one already did this execution's work: take its outcome
	lgResume   = "resume"   // the graph awaits a person: a new graph run with command.resume
	lgContinue = "continue" // the latest one failed (a retry): a new graph run from its last checkpoint
)

// begin decides how this execution of req goes on the thread tid, from the graph runs already on
// it, so that an execution never starts a graph run while another may still run (the server
// would refuse it: multitask_strategy reject) and never does the graph's work twice:
//
//   - a run pending or running is joined, whoever started it;
//   - none at all: start;
//   - a resume whose interrupt is still pending: resume;
//   - the latest succeeded: adopt it (a recovery after the graph ended, a resume already sent, a
//     retry of a run whose media steps failed after the graph);
//   - the latest failed, timed out or was cancelled (a retry): continue from the thread's last
//     checkpoint when nodes are left to run, else start again.
func (e *Engine) begin(ctx context.Context, tid string, req *engine.RunRequest) (lgRun, string, error) {
	var runs []lgRun
	if err := e.lgCall(ctx, http.MethodGet, "/threads/"+tid+"/runs?limit=100", nil, &runs); err != nil {
		return lgRun{}, "", err
	}
	var latest lgRun
	for _, r := range runs {
		if r.Status == "pending" || r.Status == "running" {
			return r, lgJoin, nil
		}
		if latest.RunID == "" || r.CreatedAt > latest.CreatedAt { // RFC 3339 in UTC: ordered as text
			latest = r
		}
	}
	if latest.RunID == "" {
		return lgRun{}, lgStart, nil
	}
	var st lgState
	if err := e.lgCall(ctx, http.MethodGet, "/threads/"+tid+"/state", nil, &st); err != nil {
		return lgRun{}, "", err
	}
	switch {
	case req.ResumeInput != nil && interrupted(st) != nil:
		return lgRun{}, lgResume, nil
	case latest.Status == "success":
		return latest, lgAdopt, nil
	case len(st.Next) > 0:
		return lgRun{}, lgContinue, nil
	}
	return lgRun{}, lgStart, nil
}

// configurable is the graph run's config.configurable: the run's metadata, and the host's
// address and the run's tool credential for a graph that reads the owner's knowledge
// (docs/langgraph.md). The credential's key starts with "__": LangGraph keeps such keys out of
// checkpoint metadata, LangSmith traces and streamed events.
func (e *Engine) configurable(req *engine.RunRequest, meta map[string]any) map[string]any {
	c := maps.Clone(meta)
	base := req.CallbackURL
	if base == "" {
		base = e.opts.CallbackBaseURL
	}
	if base != "" {
		c[ConfigHostURL] = strings.TrimRight(base, "/")
	}
	if req.Credential != "" {
		c[ConfigToken] = req.Credential
	}
	return c
}

// Keys of config.configurable a graph reads to call the host back as the run's owner.
const (
	ConfigHostURL = "reelforge_url"
	ConfigToken   = "__reelforge_token"
)

// taskError is a failed task's error as a person reads it: the LangGraph.js server gives the
// thrown error as JSON ({"message": "...", "name": "Error"}), the Python one as a string.
func taskError(s string) string {
	var e struct {
		Name    string `json:"name"`
		Message string `json:"message"`
	}
	if json.Unmarshal([]byte(s), &e) != nil || e.Message == "" {
		return s
	}
	if e.Name != "" && e.Name != "Error" {
		return e.Name + ": " + e.Message
	}
	return e.Message
}

// interrupted is what a thread paused by interrupt() awaits: the first task with interrupts, its
// node the step, its value's prompt (or the value itself, when a string) the prompt.
func interrupted(st lgState) *engine.Awaiting {
	for _, t := range st.Tasks {
		if len(t.Interrupts) == 0 {
			continue
		}
		prompt := ""
		switch v := t.Interrupts[0].Value.(type) {
		case string:
			prompt = v
		case map[string]any:
			prompt, _ = v["prompt"].(string)
			if prompt == "" {
				prompt, _ = v["question"].(string)
			}
		}
		if prompt == "" {
			prompt = "The agent graph awaits review: resume the run with your input."
		}
		return &engine.Awaiting{StepID: t.Name, Prompt: prompt}
	}
	return nil
}

// follow reads the run's stream (from its first event) until it ends, reporting each node's update
// as a completed trace step; it answers the message of an error event, if any. A stream cut before
// the run ended is joined again. *progress is the run's progress, moved at each node.
func (e *Engine) follow(ctx context.Context, h engine.Host, runID, tid, lgRunID string, progress *float64) (string, error) {
	seen := map[string]bool{}
	// The stream says when a node ended, not when it began: a node's step starts when the update
	// before it came (a chain of nodes: exactly its own time; parallel branches: at most theirs).
	// Left to the host, the start would be the time of the report, after the end.
	since := e.opts.Now().UTC()
	for attempt := 0; ; attempt++ {
		errMsg, ended, err := e.stream(ctx, tid, lgRunID, func(event string, data json.RawMessage, id string) {
			if event != "updates" || seen[id] {
				return
			}
			seen[id] = true
			var upd map[string]json.RawMessage
			if json.Unmarshal(data, &upd) != nil {
				return
			}
			for node, raw := range upd {
				if node == "__interrupt__" {
					continue
				}
				var out map[string]any
				if json.Unmarshal(raw, &out) != nil {
					out = map[string]any{"update": raw}
				}
				began, at := since, e.opts.Now().UTC()
				d := float64(at.Sub(began).Milliseconds())
				e.report(ctx, h, runID, engine.TraceStep{StepID: node, StepName: node, Agent: "graph_node",
					Status: engine.StepCompleted, Engine: Name, StartedAt: &began, CompletedAt: &at, DurationMS: &d,
					Inputs: map[string]any{"thread_id": tid}, Outputs: out})
				since = at
				*progress = min(*progress+(90-*progress)/3, 90)
				if err := h.ReportProgress(ctx, runID, *progress, node); err != nil {
					e.opts.Logger.Warn("host refused the progress", "run_id", runID, "error", err)
				}
			}
		})
		if ended || ctx.Err() != nil {
			return errMsg, nil
		}
		if attempt >= 3 {
			if err == nil {
				err = errors.New("the run's stream ended before the run")
			}
			return errMsg, err
		}
		e.opts.Logger.Info("langgraph stream cut: joining again", "run_id", runID, "error", err)
		select {
		case <-ctx.Done():
			return errMsg, nil
		case <-time.After(time.Duration(attempt+1) * time.Second):
		}
	}
}

// stream joins the run's event stream once. ended is true when the stream ended because the run
// did (its status is no longer pending or running).
func (e *Engine) stream(ctx context.Context, tid, lgRunID string, on func(event string, data json.RawMessage, id string)) (errMsg string, ended bool, err error) {
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, e.opts.URL+"/threads/"+tid+"/runs/"+lgRunID+"/stream", nil)
	if err != nil {
		return "", false, err
	}
	r.Header.Set("Accept", "text/event-stream")
	r.Header.Set("Last-Event-ID", "-1") // from the run's first event (it was created resumable)
	e.authorize(r)
	// The stream lasts as long as the graph: no client timeout, ctx bounds it.
	res, err := (&http.Client{Transport: e.opts.HTTPClient.Transport}).Do(r)
	if err != nil {
		return "", false, err
	}
	defer res.Body.Close()
	if res.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		return "", false, fmt.Errorf("GET stream answered %d: %s", res.StatusCode, bytes.TrimSpace(b))
	}
	// Server-sent events: "event:", "data:" and "id:" lines, a blank line ends one.
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), outbound.MaxAnswer)
	var event, id string
	var data bytes.Buffer
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if event != "" {
				if event == "error" {
					var ev struct {
						Error   string `json:"error"`
						Message string `json:"message"`
					}
					_ = json.Unmarshal(data.Bytes(), &ev)
					errMsg = strings.TrimSpace(ev.Error + ": " + ev.Message)
				}
				on(event, bytes.Clone(data.Bytes()), id)
			}
			event, id = "", ""
			data.Reset()
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(line[len("event:"):])
		case strings.HasPrefix(line, "id:"):
			id = strings.TrimSpace(line[len("id:"):])
		case strings.HasPrefix(line, "data:"):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(strings.TrimPrefix(line[len("data:"):], " "))
		}
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		return errMsg, false, err
	}
	var run lgRun
	if err := e.lgCall(ctx, http.MethodGet, "/threads/"+tid+"/runs/"+lgRunID, nil, &run); err != nil {
		return errMsg, false, err
	}
	return errMsg, run.Status != "pending" && run.Status != "running", nil
}

// lgCancel asks the server to stop a graph run (best effort: the host cancels the run either way).
func (e *Engine) lgCancel(tid, lgRunID string) {
	ctx, cancel := context.WithTimeout(context.Background(), e.opts.Timeout)
	defer cancel()
	if err := e.lgCall(ctx, http.MethodPost, "/threads/"+tid+"/runs/"+lgRunID+"/cancel", nil, nil); err != nil {
		e.opts.Logger.Info("langgraph cancel not confirmed", "thread_id", tid, "run_id", lgRunID, "error", err)
	}
}

// cancelLangGraph stops the graph runs in flight on the run's thread.
func (e *Engine) cancelLangGraph(ctx context.Context, runID string) {
	tid := ThreadID(runID)
	var runs []lgRun
	if err := e.lgCall(ctx, http.MethodGet, "/threads/"+tid+"/runs?limit=100", nil, &runs); err != nil {
		e.opts.Logger.Info("langgraph cancel: list the thread's runs", "run_id", runID, "error", err)
		return
	}
	for _, r := range runs {
		if r.Status == "pending" || r.Status == "running" {
			e.lgCancel(tid, r.RunID)
		}
	}
}

// authorize adds the server's API key (a LangSmith deployment's X-Api-Key), when one is set.
func (e *Engine) authorize(r *http.Request) {
	if e.opts.APIKey != "" {
		r.Header.Set("X-Api-Key", e.opts.APIKey)
	}
}

// lgCall sends one request to the LangGraph server (body as JSON when not nil) and decodes a 2xx
// answer into out (when not nil); any other answer is an error with its status and message.
func (e *Engine) lgCall(ctx context.Context, method, path string, body, out any) error {
	ctx, cancel := context.WithTimeout(ctx, e.opts.Timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(raw)
	}
	r, err := http.NewRequestWithContext(ctx, method, e.opts.URL+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	r.Header.Set("Accept", "application/json")
	r.Header.Set("User-Agent", "reelforge-engine/1")
	e.authorize(r)
	res, err := e.opts.HTTPClient.Do(r)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, outbound.MaxAnswer))
	if err != nil {
		return err
	}
	if res.StatusCode/100 != 2 {
		a := outbound.Answer{Status: res.StatusCode, Body: raw}
		return fmt.Errorf("%s %s answered %s", method, path, a.Brief())
	}
	if out == nil || len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s %s: the answer is not the expected JSON: %w", method, path, err)
	}
	return nil
}
