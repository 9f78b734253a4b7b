package runs_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reelforge/reelforge/host/auth"
	"github.com/reelforge/reelforge/host/manifest"
	"github.com/reelforge/reelforge/host/plugins"
	"github.com/reelforge/reelforge/host/runs"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/internal/flowisetest"
	"github.com/reelforge/reelforge/sdk/engine"
)

// flowiseReplay answers as the recorded Flowise did: the exchange with the request's method, path,
// API key, question and chatId. It keeps the predictions' bodies for the test to read.
type flowiseReplay struct {
	key       string
	exchanges []flowisetest.Exchange
	mu        sync.Mutex
	asked     []map[string]any
	problems  []string
}

func (rp *flowiseReplay) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	_ = json.NewDecoder(r.Body).Decode(&body)
	auth := strings.ReplaceAll(r.Header.Get("Authorization"), rp.key, "<CHATFLOW_API_KEY>")
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if body != nil {
		rp.asked = append(rp.asked, body)
	}
	for _, e := range rp.exchanges {
		// A refusal recorded without the key answers the same with it: Flowise checks the id first.
		keyed := e.Request.Authorization == auth || (e.Request.Authorization == "" && e.Response.Status == http.StatusBadRequest)
		if !keyed || !e.Asks(r.Method, r.URL.Path, body) {
			continue
		}
		e.Answer(w)
		return
	}
	rp.problems = append(rp.problems, "no recorded exchange for "+r.Method+" "+r.URL.Path+" "+auth)
	http.Error(w, "not recorded", http.StatusTeapot)
}

// kb_chat runs on the chatflow plugin speaking to a stock Flowise (its recorded exchanges), on
// each database: the run completes on the chatflow engine with the flow's answer, its session
// continues the conversation Flowise made, the flow gets the owner and a run-scoped tool
// credential in overrideConfig.vars; a chatflow id Flowise refuses degrades the run with Flowise's
// own message, in the run's degraded reason and its trace, asked once. Issue 39, items 1 to 3.
func TestFlowiseRunThroughTheHost(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the chatflow plugin")
	}
	t.Parallel()
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "chatflow-plugin"), "github.com/reelforge/reelforge/plugins/chatflow/cmd/chatflow-plugin")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build chatflow-plugin: %v\n%s", err, out)
	}
	exchanges := flowisetest.Load(t, filepath.Join("..", "..", "plugins", "chatflow", "testdata", "flowise", "exchanges.json"))
	// The recording's flow and the session of its second turn.
	var flowID, session string
	for _, e := range exchanges {
		if e.Request.Authorization != "" && e.Request.Method == http.MethodPost {
			flowID = strings.TrimPrefix(e.Request.Path, "/api/v1/prediction/")
			if c, ok := e.Request.Body["chatId"].(string); ok {
				session = c
			}
		}
	}
	if flowID == "" || session == "" {
		t.Fatalf("the recording lacks a keyed two-turn conversation: flow %q, session %q", flowID, session)
	}
	for name, open := range databases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := open(t)
			const key = "replay-flowise-key"
			rp := &flowiseReplay{key: key, exchanges: exchanges}
			fw := httptest.NewServer(rp)
			t.Cleanup(fw.Close)
			// CHATFLOW_URL is Flowise's bare address: the plugin finds /api/v1 by its ping.
			set, err := plugins.NewSet(plugins.Config{Name: "chatflow", Dir: dir, Host: runs.NoRunHost("chatflow", nil),
				Env: []string{engine.SettingsEnvValue(map[string]string{"url": fw.URL, "api_key": key})}})
			if err != nil {
				t.Fatal(err)
			}
			if err := set.Start(ctx); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(set.Stop)
			kbChat := func(id string, chatflowID any) *manifest.Manifest {
				return &manifest.Manifest{ID: id, Name: id, Version: "1", Engine: "chatflow", Fallback: "node", Timeout: time.Minute,
					Settings: map[string]any{"chatflow_id": chatflowID},
					Steps:    []engine.Step{{ID: "lookup", Name: "Lookup", Agent: "kb_lookup"}, {ID: "reply", Name: "Reply", Agent: "answer", DependsOn: []string{"lookup"}}}}
			}
			authSvc := auth.New(st, "test-secret-test-secret-test-secret", 4)
			s := newService(t, runs.Deps{Store: st, Plugins: set, Credentials: authSvc, Manifests: testRegistry(t,
				// the id through the environment, as the shipped kb_chat names it (here its default)
				kbChat("kb_chat", map[string]any{"env": "FLOWISE_TEST_UNSET_KB_ID", "default": flowID}),
				kbChat("kb_chat_not_an_id", "kb-chat"))}, runs.Options{Workers: 2})
			s.StartExecutor(ctx)
			t.Cleanup(s.StopExecutor)
			p := newUser(t, st)
			run := func(workflow string, inputs map[string]any) (*store.Run, map[string]any) {
				t.Helper()
				r, err := s.Start(ctx, runs.StartParams{Workflow: workflow, User: p, Inputs: inputs})
				if err != nil {
					t.Fatal(err)
				}
				got := waitStatus(t, st, r.ID, store.RunCompleted, store.RunFailed)
				var out map[string]any
				_ = json.Unmarshal(got.Outputs, &out)
				return got, out
			}

			// Turn 1: Flowise's answer, in the conversation it made.
			got, out := run("kb_chat", map[string]any{"question": "How long does the glaze kiln fire?"})
			answer, _ := out["answer"].(string)
			if got.Status != store.RunCompleted || got.Engine != "chatflow" || got.Degraded != "" ||
				!strings.Contains(answer, "forty-five minutes") || !strings.Contains(answer, "Turn 1 of conversation") || out["session_id"] == "" {
				t.Fatalf("kb_chat = %s on %s (degraded %q), outputs %v; want the flow's first turn, undegraded", got.Status, got.Engine, got.Degraded, out)
			}
			// The same conversation, carried by the run's session_id: the flow's turn 2.
			got, out = run("kb_chat", map[string]any{"question": "And how does the kiln cool?", "session_id": session})
			answer, _ = out["answer"].(string)
			if got.Status != store.RunCompleted || got.Degraded != "" || out["session_id"] != session ||
				!strings.Contains(answer, "Turn 2 of conversation "+session) || !strings.Contains(answer, "Earlier you asked: How long does the glaze kiln fire?") {
				t.Fatalf("kb_chat in session %s = %s (degraded %q), outputs %v; want turn 2 of it", session, got.Status, got.Degraded, out)
			}
			rp.mu.Lock()
			asked := append([]map[string]any(nil), rp.asked...)
			rp.mu.Unlock()
			last := asked[len(asked)-1]
			oc, _ := last["overrideConfig"].(map[string]any)
			vars, _ := oc["vars"].(map[string]any)
			if last["chatId"] != session || oc["sessionId"] != session || vars["user_id"] != p.UserID || !auth.IsTool(vars["reelforge_token"].(string)) {
				t.Errorf("prediction = %v; want chatId and overrideConfig.sessionId %s, vars with the owner and an rft_ credential", last, session)
			}
			if strings.Contains(string(got.Outputs), "rft_") {
				t.Errorf("the tool credential is in the run's outputs: %s", got.Outputs)
			}

			// An id Flowise refuses (400 Invalid Chatflow ID): asked once, its message is the run's
			// degraded reason and in its trace; the answer comes from the notes (none here).
			before := len(asked)
			got, _ = run("kb_chat_not_an_id", map[string]any{"question": "How long does the glaze kiln fire?"})
			if got.Status != store.RunCompleted || !strings.Contains(got.Degraded, "Invalid Chatflow ID") {
				t.Errorf("kb_chat with a chatflow id that is none = %s, degraded %q; want completed, degraded with Flowise's message", got.Status, got.Degraded)
			}
			steps, err := st.ListTraceSteps(ctx, got.ID)
			if err != nil {
				t.Fatal(err)
			}
			var trace strings.Builder
			for _, s := range steps {
				trace.Write(s.Step)
			}
			if !strings.Contains(trace.String(), "Invalid Chatflow ID") {
				t.Errorf("the degraded run's trace lacks Flowise's message: %s", trace.String())
			}
			rp.mu.Lock()
			if n := len(rp.asked) - before; n != 1 {
				t.Errorf("Flowise was asked %d times for the refused id, want once (a 4xx is not retried)", n)
			}
			for _, pr := range rp.problems {
				t.Error(pr)
			}
			rp.mu.Unlock()
		})
	}
}
