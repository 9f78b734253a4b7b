package automation_test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

type workflow struct {
	ID          string                                   `json:"id"`
	Name        string                                   `json:"name"`
	Active      bool                                     `json:"active"`
	Nodes       []node                                   `json:"nodes"`
	Connections map[string]map[string][][]connectionEdge `json:"connections"`
	Settings    map[string]any                           `json:"settings"`
}

type node struct {
	ID          string                   `json:"id"`
	Name        string                   `json:"name"`
	Type        string                   `json:"type"`
	TypeVersion float64                  `json:"typeVersion"`
	Position    []float64                `json:"position"`
	Parameters  map[string]any           `json:"parameters"`
	Credentials map[string]credentialRef `json:"credentials"`
}

type credentialRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

type connectionEdge struct {
	Node  string `json:"node"`
	Type  string `json:"type"`
	Index int    `json:"index"`
}

func load(t *testing.T, file string) (*workflow, string) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("read %s: %v", file, err)
	}
	var w workflow
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	if err := dec.Decode(&w); err != nil {
		t.Fatalf("%s is not a workflow: %v", file, err)
	}
	return &w, string(raw)
}

func (w *workflow) node(name string) *node {
	for i := range w.Nodes {
		if w.Nodes[i].Name == name {
			return &w.Nodes[i]
		}
	}
	return nil
}

func (w *workflow) ofType(typ string) []*node {
	var out []*node
	for i := range w.Nodes {
		if w.Nodes[i].Type == typ {
			out = append(out, &w.Nodes[i])
		}
	}
	return out
}

var files = []string{"scheduler-loop.json", "webhook-job.json", "event-receiver.json"}

// TestStructure checks what n8n's import needs: named nodes with unique ids and names, a
// n8n-nodes-base type and version, parameters and a position; connections between existing nodes;
// one trigger from which every node is reached.
func TestStructure(t *testing.T) {
	t.Parallel()
	for _, file := range files {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			w, _ := load(t, file)
			if w.Name == "" || len(w.ID) != 16 || w.Active {
				t.Errorf("workflow id %q (want 16 characters, for publish:workflow --id), name %q, active %v (want inactive until published)", w.ID, w.Name, w.Active)
			}
			if w.Settings["executionOrder"] != "v1" {
				t.Errorf("settings.executionOrder = %v, want v1", w.Settings["executionOrder"])
			}
			ids, names := map[string]bool{}, map[string]bool{}
			var triggers []string
			for _, n := range w.Nodes {
				if n.ID == "" || ids[n.ID] || n.Name == "" || names[n.Name] {
					t.Errorf("node %q: id %q missing or repeated, or name repeated", n.Name, n.ID)
				}
				ids[n.ID], names[n.Name] = true, true
				if !strings.HasPrefix(n.Type, "n8n-nodes-base.") || n.TypeVersion <= 0 || n.Parameters == nil || len(n.Position) != 2 {
					t.Errorf("node %q: type %q version %v, parameters %v, position %v", n.Name, n.Type, n.TypeVersion, n.Parameters != nil, n.Position)
				}
				// A Manual Trigger beside the real one lets `n8n execute` run the workflow by hand.
				if (strings.HasSuffix(n.Type, "Trigger") && n.Type != "n8n-nodes-base.manualTrigger") || n.Type == "n8n-nodes-base.webhook" {
					triggers = append(triggers, n.Name)
				}
			}
			if len(triggers) != 1 {
				t.Fatalf("triggers = %v, want exactly one (besides a manual one)", triggers)
			}
			next := map[string][]string{}
			for from, outputs := range w.Connections {
				if !names[from] {
					t.Errorf("connection from %q: no such node", from)
				}
				for typ, branches := range outputs {
					for _, branch := range branches {
						for _, e := range branch {
							if !names[e.Node] || e.Type != typ || typ != "main" {
								t.Errorf("connection %q -> %q (%s/%s): no such node or not main", from, e.Node, typ, e.Type)
							}
							next[from] = append(next[from], e.Node)
						}
					}
				}
			}
			seen := map[string]bool{triggers[0]: true}
			queue := []string{triggers[0]}
			for len(queue) > 0 {
				n := queue[0]
				queue = queue[1:]
				for _, m := range next[n] {
					if !seen[m] {
						seen[m] = true
						queue = append(queue, m)
					}
				}
			}
			for _, n := range w.Nodes {
				if n.Type == "n8n-nodes-base.manualTrigger" {
					seen[n.Name] = true // a start of its own, checked by the workflow's test
				}
			}
			for name := range names {
				if !seen[name] {
					t.Errorf("node %q is not reached from the trigger %q", name, triggers[0])
				}
			}
		})
	}
}

var (
	secretKey   = regexp.MustCompile(`(?i)(secret|password|token|api[_-]?key|authorization)`)
	bearerValue = regexp.MustCompile(`(?i)bearer\s+[A-Za-z0-9._~+/-]{8,}`)
	hexSecret   = regexp.MustCompile(`\b[0-9a-f]{32,}\b`)
	jwt         = regexp.MustCompile(`eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`)
)

// TestNoSecrets checks that credentials are referenced, never inline: no bearer token, JWT, long hex
// string or secret-named literal anywhere, and no Authorization header written by hand.
func TestNoSecrets(t *testing.T) {
	t.Parallel()
	for _, file := range files {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			w, raw := load(t, file)
			for _, re := range []*regexp.Regexp{bearerValue, hexSecret, jwt} {
				if m := re.FindString(raw); m != "" {
					t.Errorf("%s holds what looks like a secret: %q", file, m)
				}
			}
			for _, n := range w.Nodes {
				walk(n.Parameters, "", func(path string, v any) {
					s, ok := v.(string)
					if !ok || s == "" || strings.HasPrefix(s, "=") {
						return // expressions are computed at run time from credentials or data
					}
					last := path[strings.LastIndex(path, ".")+1:]
					if secretKey.MatchString(last) && last != "authentication" {
						t.Errorf("node %q: parameter %s holds a literal %q; use a credential", n.Name, path, s)
					}
				})
				if hp, ok := n.Parameters["headerParameters"].(map[string]any); ok {
					for _, p := range hp["parameters"].([]any) {
						if name, _ := p.(map[string]any)["name"].(string); strings.EqualFold(name, "Authorization") {
							t.Errorf("node %q writes an Authorization header; use an httpHeaderAuth credential", n.Name)
						}
					}
				}
				for typ, ref := range n.Credentials {
					if ref.ID == "" || ref.Name == "" {
						t.Errorf("node %q: credential %s must be a reference {id, name}, got %+v", n.Name, typ, ref)
					}
				}
			}
		})
	}
}

func walk(v any, path string, fn func(path string, v any)) {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			walk(c, path+"."+k, fn)
		}
	case []any:
		for _, c := range x {
			walk(c, path, fn)
		}
	default:
		fn(path, v)
	}
}

func TestSchedulerLoop(t *testing.T) {
	t.Parallel()
	w, _ := load(t, "scheduler-loop.json")
	trig := w.ofType("n8n-nodes-base.scheduleTrigger")
	if len(trig) != 1 {
		t.Fatalf("schedule triggers = %d, want 1", len(trig))
	}
	rule, _ := trig[0].Parameters["rule"].(map[string]any)
	iv, _ := rule["interval"].([]any)
	if len(iv) != 1 || iv[0].(map[string]any)["field"] != "minutes" || iv[0].(map[string]any)["minutesInterval"] != float64(15) {
		t.Errorf("schedule rule = %v, want every 15 minutes", rule)
	}
	var urls []string
	for _, n := range w.ofType("n8n-nodes-base.httpRequest") {
		urls = append(urls, n.Parameters["method"].(string)+" "+n.Parameters["url"].(string))
		if n.Parameters["authentication"] != "genericCredentialType" || n.Parameters["genericAuthType"] != "httpHeaderAuth" || n.Credentials["httpHeaderAuth"].ID == "" {
			t.Errorf("node %q must authenticate with an httpHeaderAuth credential (Authorization: Bearer)", n.Name)
		}
	}
	want := []string{"GET /api/scheduler/pending-tasks", "POST /api/scheduler/trigger"}
	for i, u := range urls {
		if i >= len(want) || !strings.HasPrefix(u, strings.Fields(want[i])[0]) || !strings.HasSuffix(u, strings.Fields(want[i])[1]) {
			t.Errorf("HTTP requests = %v, want %v in that order", urls, want)
			break
		}
	}
	split := w.ofType("n8n-nodes-base.splitOut")
	if len(split) != 1 || split[0].Parameters["fieldToSplitOut"] != "data.tasks" {
		t.Errorf("want one Split Out of data.tasks (the pending-tasks answer), got %+v", split)
	}
	order := []string{"n8n-nodes-base.scheduleTrigger", "n8n-nodes-base.set", "n8n-nodes-base.httpRequest", "n8n-nodes-base.splitOut", "n8n-nodes-base.httpRequest"}
	var got []string
	for n := w.node("Every 15 minutes"); n != nil; {
		got = append(got, n.Type)
		edges := w.Connections[n.Name]["main"]
		if len(edges) == 0 || len(edges[0]) == 0 {
			break
		}
		n = w.node(edges[0][0].Node)
	}
	if !slices.Equal(got, order) {
		t.Errorf("chain = %v, want %v", got, order)
	}
	// `n8n execute --id=rfSchedulerLoop1` needs a Manual Trigger: it starts the same chain.
	manual := w.ofType("n8n-nodes-base.manualTrigger")
	if len(manual) != 1 || len(w.Connections[manual[0].Name]["main"]) == 0 || w.Connections[manual[0].Name]["main"][0][0].Node != "Settings" {
		t.Errorf("want one Manual Trigger leading to Settings, got %+v", manual)
	}
}

func TestWebhookJobSignsItsCallback(t *testing.T) {
	t.Parallel()
	w, _ := load(t, "webhook-job.json")
	hooks := w.ofType("n8n-nodes-base.webhook")
	if len(hooks) != 1 || hooks[0].Parameters["httpMethod"] != "POST" || hooks[0].Parameters["path"] == "" {
		t.Fatalf("want one POST webhook with a path, got %+v", hooks)
	}
	crypto := w.ofType("n8n-nodes-base.crypto")
	if len(crypto) != 1 {
		t.Fatalf("crypto nodes = %d, want 1 (the HMAC of the callback body)", len(crypto))
	}
	c := crypto[0]
	if c.TypeVersion < 2 || c.Parameters["action"] != "hmac" || c.Parameters["type"] != "SHA256" || c.Parameters["encoding"] != "hex" ||
		c.Parameters["value"] != "={{ $json.body }}" || c.Credentials["crypto"].ID == "" {
		t.Errorf("crypto node = %+v, want a v2 HMAC-SHA256 hex of $json.body with the secret from a crypto credential", c)
	}
	if _, inline := c.Parameters["secret"]; inline {
		t.Errorf("crypto node carries its secret inline")
	}
	var callback *node
	for _, n := range w.ofType("n8n-nodes-base.httpRequest") {
		callback = n
	}
	if callback == nil {
		t.Fatal("no HTTP Request node calls back")
	}
	p := callback.Parameters
	if p["method"] != "POST" || p["url"] != "={{ $json.callback_url }}" || p["contentType"] != "raw" || p["body"] != "={{ $json.body }}" {
		t.Errorf("callback request = %+v, want POST $json.callback_url with the signed body unchanged (raw)", p)
	}
	hp, _ := p["headerParameters"].(map[string]any)
	params, _ := hp["parameters"].([]any)
	found := false
	for _, h := range params {
		m := h.(map[string]any)
		if m["name"] == "X-Signature" && m["value"] == "=sha256={{ $json.signature }}" {
			found = true
		}
	}
	if !found {
		t.Errorf("callback headers = %v, want X-Signature: sha256=<signature>", params)
	}
	code := w.ofType("n8n-nodes-base.code")
	if len(code) != 1 || !strings.Contains(code[0].Parameters["jsCode"].(string), "JSON.stringify(callback)") {
		t.Errorf("the work node must produce the callback body as one string, so the signed bytes are the sent bytes")
	}
}

// next returns the nodes the output branch of the named node leads to (branch 0 for most nodes; an
// IF node's true branch is 0 and its false branch 1).
func (w *workflow) next(name string, branch int) []*node {
	var out []*node
	edges := w.Connections[name]["main"]
	if branch >= len(edges) {
		return nil
	}
	for _, e := range edges[branch] {
		if n := w.node(e.Node); n != nil {
			out = append(out, n)
		}
	}
	return out
}

// respondsWith follows the chain from the first node until a Respond to Webhook node and returns
// its response code (200 when the node leaves it at n8n's default), or 0 when none is reached.
func (w *workflow) respondsWith(from []*node) int {
	seen := map[string]bool{}
	for len(from) > 0 {
		n := from[0]
		from = from[1:]
		if seen[n.Name] {
			continue
		}
		seen[n.Name] = true
		if n.Type == "n8n-nodes-base.respondToWebhook" {
			opts, _ := n.Parameters["options"].(map[string]any)
			if code, ok := opts["responseCode"].(float64); ok {
				return int(code)
			}
			return 200
		}
		from = append(from, w.next(n.Name, 0)...)
	}
	return 0
}

// TestEventReceiverVerifiesSignatures checks the receiver of the host's outbound events: the webhook
// keeps the raw body (the host signs its exact bytes), a Crypto node computes the HMAC-SHA256 hex of
// those bytes with the secret of a credential of its own, an IF node compares it with
// X-Webhook-Signature, and the answer waits for that verdict: 2xx on a match, 401 otherwise.
func TestEventReceiverVerifiesSignatures(t *testing.T) {
	t.Parallel()
	w, _ := load(t, "event-receiver.json")
	hooks := w.ofType("n8n-nodes-base.webhook")
	if len(hooks) != 1 {
		t.Fatalf("webhooks = %d, want 1", len(hooks))
	}
	h := hooks[0]
	opts, _ := h.Parameters["options"].(map[string]any)
	if h.Parameters["httpMethod"] != "POST" || h.Parameters["path"] != "reelforge-events" || h.Parameters["responseMode"] != "responseNode" || opts["rawBody"] != true {
		t.Errorf("webhook = %+v, want POST reelforge-events answering from a Respond to Webhook node, with the raw body kept", h.Parameters)
	}
	crypto := w.ofType("n8n-nodes-base.crypto")
	if len(crypto) != 1 {
		t.Fatalf("crypto nodes = %d, want 1 (the HMAC of the raw body)", len(crypto))
	}
	c := crypto[0]
	if c.TypeVersion < 2 || c.Parameters["action"] != "hmac" || c.Parameters["type"] != "SHA256" || c.Parameters["encoding"] != "hex" ||
		c.Parameters["binaryData"] != true || c.Parameters["binaryPropertyName"] != "data" {
		t.Errorf("crypto node = %+v, want a v2 HMAC-SHA256 hex of the webhook's raw body (binary property data)", c.Parameters)
	}
	if _, inline := c.Parameters["secret"]; inline {
		t.Errorf("crypto node carries its secret inline")
	}
	// AUTOMATION_WEBHOOK_SECRET is not CALLBACK_SECRET: the receiver has a credential of its own.
	job, _ := load(t, "webhook-job.json")
	if ref := c.Credentials["crypto"]; ref.ID == "" || ref.ID == job.ofType("n8n-nodes-base.crypto")[0].Credentials["crypto"].ID {
		t.Errorf("crypto credential = %+v, want its own (the event secret), not the callback secret's", ref)
	}
	if got := w.next(h.Name, 0); len(got) != 1 || got[0] != c {
		t.Errorf("the webhook must lead to the HMAC node first")
	}
	ifs := w.next(c.Name, 0)
	if len(ifs) != 1 || ifs[0].Type != "n8n-nodes-base.if" {
		t.Fatalf("the HMAC node must lead to one IF node, got %v", ifs)
	}
	cond, _ := ifs[0].Parameters["conditions"].(map[string]any)
	conds, _ := cond["conditions"].([]any)
	if len(conds) != 1 {
		t.Fatalf("IF conditions = %v, want one comparison", cond)
	}
	cmp := conds[0].(map[string]any)
	op, _ := cmp["operator"].(map[string]any)
	left, _ := cmp["leftValue"].(string)
	right, _ := cmp["rightValue"].(string)
	if op["operation"] != "equals" || !strings.Contains(left, "$json."+c.Parameters["dataPropertyName"].(string)) ||
		!strings.Contains(right, "$json.headers['x-webhook-signature']") {
		t.Errorf("IF compares %q %v %q, want the computed HMAC equal to the X-Webhook-Signature header", left, op, right)
	}
	if code := w.respondsWith(w.next(ifs[0].Name, 0)); code < 200 || code > 299 {
		t.Errorf("a matching signature is answered %d, want 2xx", code)
	}
	if code := w.respondsWith(w.next(ifs[0].Name, 1)); code != 401 {
		t.Errorf("a missing or wrong signature is answered %d, want 401", code)
	}
}
