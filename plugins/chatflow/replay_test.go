package chatflow_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/reelforge/reelforge/internal/flowisetest"
	"github.com/reelforge/reelforge/internal/outbound"
	"github.com/reelforge/reelforge/plugins/chatflow"
)

const (
	replayKey        = "replay-flowise-key"
	replayCredential = "rft_replay-credential"
)

// replay serves the recorded answers: a request gets the answer of the recording with its method,
// path, Authorization, question and chatId, and its body must be the recorded one.
type replay struct {
	t         *testing.T
	exchanges []flowisetest.Exchange
	mu        sync.Mutex
	asked     map[string]int // predictions asked, by chatflow path
}

func (rp *replay) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	_ = json.NewDecoder(r.Body).Decode(&body)
	auth := strings.ReplaceAll(r.Header.Get("Authorization"), replayKey, "<CHATFLOW_API_KEY>")
	rp.mu.Lock()
	rp.asked[r.URL.Path]++
	rp.mu.Unlock()
	for _, e := range rp.exchanges {
		q := e.Request
		if q.Authorization != auth || !e.Asks(r.Method, r.URL.Path, body) {
			continue
		}
		raw, _ := json.Marshal(body)
		var got map[string]any
		_ = json.Unmarshal([]byte(strings.ReplaceAll(string(raw), replayCredential, "<reelforge_token>")), &got)
		if _, byHost := q.Body["overrideConfig"]; !byHost {
			// a refusal the script asked for by hand: only its answer is Flowise's
		} else if diff := cmp.Diff(q.Body, got); diff != "" {
			rp.t.Errorf("%s %s: body differs from what the host sent the real Flowise (-recorded +sent):\n%s", r.Method, r.URL.Path, diff)
		}
		e.Answer(w)
		return
	}
	rp.t.Errorf("no recorded exchange for %s %s (Authorization %q) %v", r.Method, r.URL.Path, auth, body)
	http.Error(w, "not recorded", http.StatusTeapot)
}

// The engine reads a real Flowise's answers, conversation and refusals as they are.
func TestFlowiseReplay(t *testing.T) {
	t.Parallel()
	rp := &replay{t: t, asked: map[string]int{}, exchanges: flowisetest.Load(t, "testdata/flowise/exchanges.json")}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)

	// The recording's flow, asker and second-turn session.
	var flowID, userID, hostURL, session string
	for _, e := range rp.exchanges {
		if e.Request.Authorization == "" || e.Request.Method != http.MethodPost {
			continue
		}
		flowID = strings.TrimPrefix(e.Request.Path, "/api/v1/prediction/")
		vars, _ := e.Request.Body["overrideConfig"].(map[string]any)["vars"].(map[string]any)
		userID, _ = vars["user_id"].(string)
		hostURL, _ = vars[chatflow.VarURL].(string)
		if c, ok := e.Request.Body["chatId"].(string); ok {
			session = c
		}
	}
	if flowID == "" || userID == "" || session == "" {
		t.Fatalf("the recording lacks a keyed two-turn conversation: flow %q, user %q, session %q", flowID, userID, session)
	}
	opts := chatflow.Options{Tool: outbound.Tool{URL: srv.URL}, APIKey: replayKey, RetryBackoff: time.Millisecond}
	if err := chatflow.New(opts).Health(t.Context()); err != nil {
		t.Errorf("Health() = %v, want ready: Flowise's /api/v1/ping answered pong", err)
	}
	ask := func(o chatflow.Options, id, text, sid string) (chatflow.Answer, bool) {
		t.Helper()
		a, degraded, err := chatflow.Ask(t.Context(), o, chatflow.Question{Text: text, ChatflowID: id, SessionID: sid,
			Vars: map[string]any{"user_id": userID}, Credential: replayCredential, HostURL: hostURL}, nil)
		if err != nil {
			t.Fatalf("Ask(%q) = %v", text, err)
		}
		return a, degraded
	}

	first, degraded := ask(opts, flowID, "How long does the glaze kiln fire?", "")
	if degraded || !strings.Contains(first.Text, "forty-five minutes") || first.SessionID == "" {
		t.Errorf("turn 1 = %+v, degraded %t; want the flow's answer from the note, in the session Flowise made", first, degraded)
	}
	second, degraded := ask(opts, flowID, "And how does the kiln cool?", session)
	if degraded || second.SessionID != session || !strings.Contains(second.Text, "Turn 2 of conversation "+session) ||
		!strings.Contains(second.Text, "Earlier you asked: How long does the glaze kiln fire?") {
		t.Errorf("turn 2 = %+v, degraded %t; want turn 2 of %s, seeing turn 1", second, degraded, session)
	}

	// Refusals (recorded without the key: Flowise checks the id first): its own message is the
	// degraded reason, which says the tool answered (not that it is unavailable), and none is
	// asked twice.
	refusals := map[string]struct {
		id, key, want string
	}{
		"no API key":        {id: flowID, want: "answered 500: Error: predictionsServices.buildChatflow - Unauthorized"},
		"unknown chatflow":  {id: "00000000-0000-4000-8000-000000000000", want: "answered 404: Chatflow 00000000-0000-4000-8000-000000000000 not found in the database!"},
		"not a chatflow id": {id: "kb-chat", want: "answered 400: Invalid Chatflow ID"},
	}
	for name, tt := range refusals {
		o := opts
		o.APIKey = tt.key
		if name == "no API key" {
			o.Tool.URL = srv.URL + "/api/v1" // a second spelling of the same base
		}
		before := rp.count("/api/v1/prediction/" + tt.id)
		a, degraded := ask(o, tt.id, "How long does the glaze kiln fire?", "")
		if !degraded || a.Degraded != "the chatflow tool "+tt.want {
			t.Errorf("%s: Ask() = %+v, degraded %t; want the reason %q", name, a, degraded, tt.want)
		}
		if n := rp.count("/api/v1/prediction/"+tt.id) - before; n != 1 {
			t.Errorf("%s: Flowise asked %d times, want once: a refusal is not retried", name, n)
		}
	}
}

func (rp *replay) count(path string) int {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	return rp.asked[path]
}
