package chatflow_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/reelforge/reelforge/internal/outbound"
	"github.com/reelforge/reelforge/plugins/chatflow"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/enginetest"
)

// flowise replays the exchanges of a stock Flowise 3.x server, as recorded from one: its API under
// /api/v1 (GET /ping answers "pong"; POST /prediction/<id>), its web UI's page for every other path
// (200 text/html), errors as {statusCode, success: false, message}, a flow that requires an API key
// (a 500 "... - Unauthorized" without its Bearer token), a structured-output flow answering {json}
// without text, and
// buffer memory by sessionId (the answer counts the session's turns).
type flowise struct {
	key string // the API key the "keyed" flow requires

	mu       sync.Mutex
	bodies   []map[string]any
	auths    []string
	sessions map[string]int
}

const (
	flowKB     = "3f1c2a9e-7d4b-4c7e-9a51-2b8e6f0d1c11" // a plain chatflow with memory
	flowKeyed  = "8a0e5b7c-1f2d-4e3a-b6c9-0d7e4f1a2b33" // requires the API key
	flowJSON   = "c5d4e3f2-a1b0-4c9d-8e7f-6a5b4c3d2e44" // structured output
	flowObject = "d6e5f4a3-b2c1-4d0e-9f8a-7b6c5d4e3f55" // an ending Custom JS Function returning an object
	flowiseErr = `{"statusCode":%d,"success":false,"message":%q,"stack":{}}`
)

func (f *flowise) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/api/v1/ping":
		w.Header().Set("Content-Type", "text/html; charset=utf-8") // Express's res.send of a string
		_, _ = w.Write([]byte("pong"))
		return
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/api/v1/prediction/"):
	default:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<!doctype html><html lang="en"><head><title>Flowise - Build AI Agents, Visually</title></head><body><div id="root"></div></body></html>`))
		return
	}
	var body map[string]any
	_ = json.NewDecoder(r.Body).Decode(&body)
	f.mu.Lock()
	f.bodies = append(f.bodies, body)
	f.auths = append(f.auths, r.Header.Get("Authorization"))
	f.mu.Unlock()
	id := strings.TrimPrefix(r.URL.Path, "/api/v1/prediction/")
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	fail := func(status int, msg string) {
		w.WriteHeader(status)
		_, _ = fmt.Fprintf(w, flowiseErr, status, msg)
	}
	switch id {
	case flowKB, flowJSON, flowObject:
	case flowKeyed:
		if r.Header.Get("Authorization") != "Bearer "+f.key {
			fail(http.StatusInternalServerError, "Error: predictionsServices.buildChatflow - Unauthorized")
			return
		}
	default:
		if !uuidLike.MatchString(id) {
			fail(http.StatusBadRequest, "Invalid Chatflow ID")
		} else {
			fail(http.StatusNotFound, fmt.Sprintf("Chatflow %s not found in the database!", id))
		}
		return
	}
	oc, _ := body["overrideConfig"].(map[string]any)
	session, _ := oc["sessionId"].(string)
	if session == "" {
		session, _ = body["chatId"].(string)
	}
	if session == "" {
		session = "9e2f6c1a-5b7d-4a3e-8c0f-1d2e3f4a5b66" // Flowise makes a chatId when none is sent
	}
	f.mu.Lock()
	if f.sessions == nil {
		f.sessions = map[string]int{}
	}
	f.sessions[session]++
	turn := f.sessions[session]
	f.mu.Unlock()
	ans := map[string]any{"question": body["question"], "chatId": session, "chatMessageId": "m-" + session, "sessionId": session}
	switch id {
	case flowJSON:
		ans["json"] = map[string]any{"answer": "Cold brew steeps for twelve hours.", "confidence": 0.9}
	case flowObject:
		// Flowise 3.1.4 spreads the object into the answer, beside its own fields (seen on a real one).
		ans["answer"], ans["steeps_hours"], ans["isStreamValid"] = "Cold brew steeps for twelve hours.", 12, false
	default:
		ans["text"] = fmt.Sprintf("Turn %d: cold brew steeps for twelve hours.", turn)
		ans["sourceDocuments"] = []any{map[string]any{"pageContent": "Cold brew steeps for twelve hours.", "metadata": map[string]any{"source": "coffee.md"}}}
	}
	_ = json.NewEncoder(w).Encode(ans)
}

// uuidLike is what Flowise takes for a chatflow id; anything else is a 400 before any lookup.
var uuidLike = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

func (f *flowise) requests() ([]map[string]any, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.bodies...), append([]string(nil), f.auths...)
}

func startFlowise(t *testing.T) (*flowise, string) {
	t.Helper()
	f := &flowise{key: "flowise-key-1"}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

// CHATFLOW_URL may be Flowise's own address or its API base: predictions reach /api/v1 either way,
// and health is Flowise's ping.
func TestFlowiseAddress(t *testing.T) {
	t.Parallel()
	_, addr := startFlowise(t)
	for _, u := range []string{addr, addr + "/", addr + "/api/v1"} {
		opts := chatflow.Options{Tool: outbound.Tool{URL: u}, Retries: -1}
		a, degraded, err := chatflow.Ask(t.Context(), opts, chatflow.Question{Text: "How long does cold brew steep?", ChatflowID: flowKB}, nil)
		if err != nil || degraded || !strings.Contains(a.Text, "twelve hours") || a.Engine != "chatflow" {
			t.Errorf("CHATFLOW_URL %s: Ask() = %+v, degraded %t, %v; want Flowise's answer", u, a, degraded, err)
		}
		if err := chatflow.New(opts).Health(t.Context()); err != nil {
			t.Errorf("CHATFLOW_URL %s: Health() = %v, want ready", u, err)
		}
	}
	// Its web UI is not its API: a base pointing at a page is not healthy, and says why.
	opts := chatflow.Options{Tool: outbound.Tool{URL: addr + "/ui"}, Retries: -1}
	a, degraded, _ := chatflow.Ask(t.Context(), opts, chatflow.Question{Text: "q", ChatflowID: flowKB}, nil)
	if !degraded || !strings.Contains(a.Degraded, "web page") {
		t.Errorf("a page answering: Ask() degraded %t, reason %q; want the reason to say a web page answered", degraded, a.Degraded)
	}
	if err := chatflow.New(opts).Health(t.Context()); !engine.ToolAnswers(err) {
		t.Errorf("a page answering: Health() = %v, want not ready (the tool answers)", err)
	}
}

// A Flowise that answers its ping 503 while it starts (or a proxy before it does) is not ready;
// once it answers pong it is, and its API under /api/v1 is found: the first answer is not kept.
func TestFlowiseStartingUp(t *testing.T) {
	t.Parallel()
	f, _ := startFlowise(t)
	var up atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			http.Error(w, "Service Unavailable", http.StatusServiceUnavailable)
			return
		}
		f.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	opts := chatflow.Options{Tool: outbound.Tool{URL: srv.URL}, Retries: -1}
	if err := chatflow.New(opts).Health(t.Context()); err == nil {
		t.Fatal("Health() while Flowise answers 503 = ready")
	}
	up.Store(true)
	if err := chatflow.New(opts).Health(t.Context()); err != nil {
		t.Errorf("Health() once Flowise answers pong = %v, want ready", err)
	}
	a, degraded, err := chatflow.Ask(t.Context(), opts, chatflow.Question{Text: "How long does cold brew steep?", ChatflowID: flowKB}, nil)
	if err != nil || degraded || !strings.Contains(a.Text, "twelve hours") {
		t.Errorf("Ask() once Flowise is up = %+v, degraded %t, %v; want Flowise's answer", a, degraded, err)
	}
}

// Flowise's own refusals reach the degraded reason and the trace, and each is asked once: a 4xx,
// and the 500 Flowise answers to a missing or wrong API key.
func TestFlowiseRefusals(t *testing.T) {
	t.Parallel()
	tool, addr := startFlowise(t)
	tests := map[string]struct {
		id, key string
		want    string // in the degraded reason
	}{
		"not a chatflow id": {id: "kb-chat", want: "answered 400: Invalid Chatflow ID"},
		"unknown chatflow":  {id: "0b9e7c1d-2f3a-4b5c-8d6e-7f8091a2b3c4", want: "answered 404: Chatflow 0b9e7c1d-2f3a-4b5c-8d6e-7f8091a2b3c4 not found in the database!"},
		"key required":      {id: flowKeyed, want: "answered 500: Error: predictionsServices.buildChatflow - Unauthorized"},
		"key is not theirs": {id: flowKeyed, key: "wrong", want: "answered 500: Error: predictionsServices.buildChatflow - Unauthorized"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			eng, host := enginetest.New(t, chatflow.New(chatflow.Options{Tool: outbound.Tool{URL: addr}, APIKey: tt.key, RetryBackoff: time.Millisecond}))
			before, _ := tool.requests()
			res, err := eng.Run(t.Context(), nil, &engine.RunRequest{RunID: "run-1",
				Workflow: engine.Workflow{ID: "kb_chat", Settings: json.RawMessage(`{"chatflow_id":"` + tt.id + `"}`)},
				Inputs:   map[string]any{"question": "How long does cold brew steep?"}})
			if err != nil {
				t.Fatal(err)
			}
			if reason, _ := res.Outputs["degraded"].(string); !strings.Contains(reason, tt.want) {
				t.Errorf("degraded = %q, want it to carry %q", reason, tt.want)
			}
			if steps := host.Steps(); len(steps) != 1 || !strings.Contains(steps[0].Degraded, tt.want) {
				t.Errorf("trace = %+v, want the step degraded with %q", steps, tt.want)
			}
			if after, _ := tool.requests(); len(after)-len(before) != 1 {
				t.Errorf("Flowise asked %d times, want once: a refusal is not retried", len(after)-len(before))
			}
		})
	}
}

// The API key goes as Flowise's Bearer token; a structured-output flow's json is the answer.
func TestFlowiseKeyAndJSON(t *testing.T) {
	t.Parallel()
	tool, addr := startFlowise(t)
	opts := chatflow.Options{Tool: outbound.Tool{URL: addr}, APIKey: tool.key, Retries: -1}
	a, degraded, err := chatflow.Ask(t.Context(), opts, chatflow.Question{Text: "q", ChatflowID: flowKeyed}, nil)
	if err != nil || degraded {
		t.Fatalf("keyed flow: Ask() = %+v, degraded %t, %v", a, degraded, err)
	}
	if _, auths := tool.requests(); auths[len(auths)-1] != "Bearer "+tool.key {
		t.Errorf("Authorization = %q, want Bearer <CHATFLOW_API_KEY>", auths[len(auths)-1])
	}
	a, degraded, err = chatflow.Ask(t.Context(), opts, chatflow.Question{Text: "q", ChatflowID: flowJSON}, nil)
	if err != nil || degraded || a.Text != "Cold brew steeps for twelve hours." || a.JSON == nil {
		t.Errorf("structured-output flow: Ask() = %+v, degraded %t, %v; want its json's answer", a, degraded, err)
	}
	if out := a.Map(); out["json"] == nil {
		t.Errorf("outputs = %v, want the json kept", out)
	}
	// A Custom JS Function that returns an object: its fields are the json, Flowise's are not.
	a, degraded, err = chatflow.Ask(t.Context(), opts, chatflow.Question{Text: "q", ChatflowID: flowObject}, nil)
	want := map[string]any{"answer": "Cold brew steeps for twelve hours.", "steeps_hours": float64(12)}
	if err != nil || degraded || a.Text != "Cold brew steeps for twelve hours." || !cmp.Equal(a.JSON, want) || a.SessionID == "" {
		t.Errorf("object-returning flow: Ask() = %+v, degraded %t, %v; want its fields %v as the json, and its session", a, degraded, err, want)
	}
}

// A conversation: the session id goes as overrideConfig.sessionId and chatId, Flowise's memory
// counts the turns, and a run without one gets the chatId Flowise made; vars name the user and
// project.
func TestFlowiseConversation(t *testing.T) {
	t.Parallel()
	tool, addr := startFlowise(t)
	eng, _ := enginetest.New(t, chatflow.New(chatflow.Options{Tool: outbound.Tool{URL: addr}, Retries: -1}))
	run := func(inputs map[string]any) map[string]any {
		t.Helper()
		res, err := eng.Run(t.Context(), nil, &engine.RunRequest{RunID: "run-1",
			Workflow: engine.Workflow{ID: "kb_chat", Settings: json.RawMessage(`{"chatflow_id":"` + flowKB + `","override_config":{"vars":{"tone":"brief"}}}`)},
			Inputs:   inputs, User: engine.UserContext{UserID: "u-1"}, Project: engine.ProjectContext{ProjectID: "p-1"}})
		if err != nil || res.Status != engine.StatusCompleted {
			t.Fatalf("Run() = %+v, %v", res, err)
		}
		return res.Outputs
	}
	first := run(map[string]any{"question": "How long does cold brew steep?"})
	sid, _ := first["session_id"].(string)
	if sid == "" || !strings.HasPrefix(first["answer"].(string), "Turn 1") {
		t.Fatalf("first turn outputs = %v, want Flowise's chatId as session_id", first)
	}
	second := run(map[string]any{"question": "And at what temperature?", "session_id": sid})
	if second["session_id"] != sid || !strings.HasPrefix(second["answer"].(string), "Turn 2") {
		t.Errorf("second turn outputs = %v, want the same session, Flowise's memory at turn 2", second)
	}
	bodies, _ := tool.requests()
	want := map[string]any{"question": "And at what temperature?", "chatId": sid,
		"overrideConfig": map[string]any{"sessionId": sid, "vars": map[string]any{"tone": "brief", "user_id": "u-1", "project_id": "p-1"}}}
	if diff := cmp.Diff(want, bodies[len(bodies)-1]); diff != "" {
		t.Errorf("second prediction body mismatch (-want +got):\n%s", diff)
	}
}

// The run's tool credential reaches the flow as vars.reelforge_token beside the host's address
// (vars.reelforge_url), across the plugin protocol, and appears in neither the outputs nor the trace.
func TestFlowiseCredential(t *testing.T) {
	t.Parallel()
	tool, addr := startFlowise(t)
	eng, h := enginetest.New(t, chatflow.New(chatflow.Options{Tool: outbound.Tool{URL: addr}, Retries: -1}))
	const secret = "rft_run-credential-secret"
	res, err := eng.Run(t.Context(), nil, &engine.RunRequest{RunID: "run-1",
		Workflow: engine.Workflow{ID: "kb_chat", Settings: json.RawMessage(`{"chatflow_id":"` + flowKB + `"}`)},
		Inputs:   map[string]any{"question": "How long does cold brew steep?"}, User: engine.UserContext{UserID: "u-1"},
		Project: engine.ProjectContext{ProjectID: "p-1"}, CallbackURL: "http://127.0.0.1:3001/", Credential: secret})
	if err != nil || res.Status != engine.StatusCompleted {
		t.Fatalf("Run() = %+v, %v", res, err)
	}
	bodies, _ := tool.requests()
	want := map[string]any{"user_id": "u-1", "project_id": "p-1", chatflow.VarToken: secret, chatflow.VarURL: "http://127.0.0.1:3001"}
	if diff := cmp.Diff(want, bodies[0]["overrideConfig"].(map[string]any)["vars"]); diff != "" {
		t.Errorf("vars mismatch (-want +got):\n%s", diff)
	}
	seen, _ := json.Marshal(map[string]any{"outputs": res.Outputs, "steps": h.Steps()})
	if strings.Contains(string(seen), "credential-secret") {
		t.Errorf("the credential leaked into the outputs or the trace: %s", seen)
	}
}
