package chatflow

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/reelforge/reelforge/internal/extract"
	"github.com/reelforge/reelforge/internal/outbound"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// NoBasis is the answer when the knowledge base holds nothing citable for the question: the
// refusal of /api/knowledge/ask (extract.NoBasis), word for word.
const NoBasis = extract.NoBasis

// SearchFunc asks the knowledge base with the caller's visibility (the host's search, or
// engine.Host.Search bound to the run's user and project).
type SearchFunc func(ctx context.Context, query string, topK int) ([]engine.SearchHit, error)

// GenerateFunc asks a language model; OK=false in its answer means no model is configured.
type GenerateFunc func(ctx context.Context, req *engine.GenerateRequest) (*engine.GenerateResult, error)

// Citation is a cited source (SPEC.md: chunk_id, source, document, excerpt). Citation number n is
// the n-th entry.
type Citation struct {
	ChunkID  string `json:"chunk_id"`
	Source   string `json:"source"`
	Document string `json:"document"`
	Excerpt  string `json:"excerpt"`
}

// Question is what Ask is asked.
type Question struct {
	Text       string
	ChatflowID string
	// SessionID is the conversation: the tool's memory sees the earlier turns of the same id (sent
	// to Flowise as overrideConfig.sessionId and chatId). Empty: the tool starts one, and
	// Answer.SessionID names it.
	SessionID string
	// Vars reach the flow as overrideConfig.vars ($vars.user_id, $vars.project_id in Flowise, when
	// the flow's security settings let vars be overridden), merged over the settings' own.
	Vars map[string]any
	// Credential is the tool credential the flow may call the host back with (a run's, or a chat
	// answer's), HostURL the host's address: sent as vars.reelforge_token and vars.reelforge_url,
	// so that a flow reads the asker's knowledge with
	// POST {$vars.reelforge_url}/api/knowledge/context, Authorization: Bearer {$vars.reelforge_token}.
	// A secret: it goes to the tool only, never into an answer, a trace or a log.
	Credential, HostURL string
}

// Flow variables of the host's call-back (Question.Credential, HostURL).
const (
	VarToken = "reelforge_token"
	VarURL   = "reelforge_url"
)

// Answer is what Ask found.
type Answer struct {
	Text      string     `json:"answer"`
	Citations []Citation `json:"citations"`
	// Engine is "chatflow" when the tool answered, "template" for the local fallback.
	Engine string `json:"engine"`
	// Degraded says why the local fallback answered; empty when the tool did.
	Degraded string `json:"degraded,omitempty"`
	// SessionID is the conversation the tool answered in (the one asked in, or the one it started).
	SessionID string `json:"session_id,omitempty"`
	// JSON is a structured-output flow's answer (Flowise's `json`), when it gave one.
	JSON any `json:"json,omitempty"`
	// TokensUsed and CostUSD are the fallback model's usage, when a model answered.
	TokensUsed int64   `json:"tokens_used,omitempty"`
	CostUSD    float64 `json:"cost_usd,omitempty"`
}

// Map is the answer as run outputs: {answer, citations, engine, degraded?, session_id?, json?}.
func (a *Answer) Map() map[string]any {
	cites := make([]any, 0, len(a.Citations))
	for _, c := range a.Citations {
		cites = append(cites, map[string]any{"chunk_id": c.ChunkID, "source": c.Source, "document": c.Document, "excerpt": c.Excerpt})
	}
	out := map[string]any{"answer": a.Text, "citations": cites, "engine": a.Engine}
	if a.Degraded != "" {
		out["degraded"] = a.Degraded
	}
	if a.SessionID != "" {
		out["session_id"] = a.SessionID
	}
	if a.JSON != nil {
		out["json"] = a.JSON
	}
	return out
}

// prediction is the chatflow tool's answer (Flowise's prediction API: text, or json for a
// structured-output flow; chatId and sessionId name the conversation).
type prediction struct {
	Text            string `json:"text"`
	JSON            any    `json:"json"`
	ChatID          string `json:"chatId"`
	SessionID       string `json:"sessionId"`
	SourceDocuments []struct {
		PageContent string         `json:"pageContent"`
		Metadata    map[string]any `json:"metadata"`
	} `json:"sourceDocuments"`
}

// Ask answers q through the chatflow tool (POST {API base}/prediction/<q.ChatflowID> with
// {question, chatId?, overrideConfig: {sessionId?, vars?, ...}}, with the API key as a Bearer
// token). When the tool is not configured, is down, refuses (its own message kept in the reason),
// answers non-2xx after the retries (a 4xx but 408 and 429 is not retried), or answers neither text
// nor json (nor fields of the flow's own: ownFields), it answers from a local prompt template over
// search (the model of opts.GenerateFunc when one answers, else an extractive answer of the best
// sentences, each cited by number; NoBasis without hits) and reports degraded = true, the reason
// saying what the tool did. The error is non-nil only when the question is empty
// (VALIDATION_ERROR), ctx ended, or the fallback itself failed (CHATFLOW_ERROR).
func Ask(ctx context.Context, opts Options, q Question, search SearchFunc) (Answer, bool, error) {
	opts = opts.WithDefaults()
	q.Text = strings.TrimSpace(q.Text)
	if q.Text == "" {
		return Answer{}, false, errcode.Invalid("question", "is required")
	}
	reason := ""
	switch {
	case opts.URL == "":
		reason = "the chatflow tool is not configured (CHATFLOW_URL)"
	case q.ChatflowID == "":
		reason = "no chatflow id is configured (CHATFLOW_KB_ID)"
	default:
		a, err := predict(ctx, opts, q)
		if err == nil {
			a.Text = engine.NormalizeCitations(a.Text, len(a.Citations))
			return a, false, nil
		}
		if ctx.Err() != nil {
			return Answer{}, false, errcode.E("chatflow.Ask", errcode.WorkflowCancelled, "the question was cancelled", ctx.Err())
		}
		opts.Logger.Warn("chatflow tool failed; answering from the local template", "chatflow_id", q.ChatflowID, "error", err)
		// predict's messages say what happened ("could not be reached", "answered 404: Invalid
		// Chatflow ID"): a refusal is not an outage, and the reason should not call it one.
		reason = "the chatflow tool failed"
		if e := errcode.As(err); e != nil {
			reason = e.Message()
		}
	}
	a, err := fallback(ctx, opts, q.Text, search)
	if err != nil {
		return Answer{}, true, err
	}
	a.Degraded = reason
	a.Text = engine.NormalizeCitations(a.Text, len(a.Citations))
	return a, true, nil
}

// APIPath is where Flowise serves its API under its own address.
const APIPath = "/api/v1"

// bases keeps, by CHATFLOW_URL, the API base found by apiBase once the tool answered.
var bases sync.Map

// apiBase is the chatflow tool's API base. A URL with a path is the base itself (Flowise's
// http://host:3000/api/v1, or any tool serving {base}/prediction/<id>). A bare address is Flowise's
// own when GET {URL}/api/v1/ping answers 2xx (its API is under /api/v1), else the base (a tool
// serving /prediction at its root); the finding is kept once the tool answered other than 5xx.
func apiBase(ctx context.Context, opts Options) string {
	if u, err := url.Parse(opts.URL); err != nil || strings.Trim(u.Path, "/") != "" {
		return opts.URL
	}
	if b, ok := bases.Load(opts.URL); ok {
		return b.(string)
	}
	ans, err := outbound.Reachable(ctx, opts.HTTPClient, opts.URL+APIPath+"/ping", outbound.HealthTimeout)
	if err != nil {
		return opts.URL // not answering: the call that follows says so
	}
	base := opts.URL
	if ans.OK() && !ans.HTML() {
		base = opts.URL + APIPath
	}
	if ans.Status >= 500 {
		// Not a finding: a Flowise starting up, or a proxy before it, answers 502/503 at its ping.
		// Kept, the bare address would stay the base after Flowise is up: every prediction and
		// health check would miss /api/v1 until the host restarts.
		return base
	}
	bases.Store(opts.URL, base)
	return base
}

// overrideConfig is the settings' override_config with q's vars merged into its vars and q's
// session; nil when empty.
func overrideConfig(opts Options, q Question) map[string]any {
	oc := maps.Clone(opts.OverrideConfig)
	if oc == nil {
		oc = map[string]any{}
	}
	own := maps.Clone(q.Vars)
	if q.Credential != "" {
		if own == nil {
			own = map[string]any{}
		}
		own[VarToken] = q.Credential
		if q.HostURL != "" {
			own[VarURL] = strings.TrimRight(q.HostURL, "/")
		}
	}
	if len(own) > 0 {
		vars := map[string]any{}
		if v, ok := oc["vars"].(map[string]any); ok {
			maps.Copy(vars, v)
		}
		maps.Copy(vars, own)
		oc["vars"] = vars
	}
	if q.SessionID != "" {
		oc["sessionId"] = q.SessionID
	}
	if len(oc) == 0 {
		return nil
	}
	return oc
}

func predict(ctx context.Context, opts Options, q Question) (Answer, error) {
	body := map[string]any{"question": q.Text}
	if oc := overrideConfig(opts, q); oc != nil {
		body["overrideConfig"] = oc
	}
	if q.SessionID != "" {
		body["chatId"] = q.SessionID
	}
	var header http.Header
	if opts.APIKey != "" {
		header = http.Header{"Authorization": {"Bearer " + opts.APIKey}}
	}
	endpoint := apiBase(ctx, opts) + "/prediction/" + q.ChatflowID
	var last error
	for attempt := 0; attempt <= opts.Retries; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return Answer{}, ctx.Err()
			case <-time.After(opts.RetryBackoff):
			}
		}
		ans, err := outbound.Post(ctx, opts.HTTPClient, endpoint, body, opts.Timeout, header)
		if err != nil {
			last = errcode.E("chatflow.predict", errcode.Chatflow, "the chatflow tool could not be reached", err)
			continue
		}
		if !ans.OK() {
			msg := fmt.Sprintf("the chatflow tool answered %d", ans.Status)
			if m := toolMessage(ans.Body); m != "" {
				msg += ": " + m
			}
			last = errcode.E("chatflow.predict", errcode.Chatflow, msg, fmt.Errorf("%s", ans.Brief()))
			if refused(ans.Status, toolMessage(ans.Body)) {
				break // the request itself is refused: asking again will not help
			}
			continue
		}
		if ans.HTML() {
			return Answer{}, errcode.New(errcode.Chatflow, "the chatflow tool answered a web page, not its API: set CHATFLOW_URL to Flowise's address or its API base (.../api/v1)")
		}
		var p prediction
		if err := json.Unmarshal(ans.Body, &p); err != nil {
			return Answer{}, errcode.E("chatflow.predict", errcode.Chatflow, "the chatflow tool answered without JSON", err)
		}
		if strings.TrimSpace(p.Text) == "" && p.JSON == nil {
			p.JSON = ownFields(ans.Body)
		}
		text := strings.TrimSpace(p.Text)
		if text == "" {
			text = jsonText(p.JSON)
		}
		if text == "" {
			return Answer{}, errcode.New(errcode.Chatflow, "the chatflow tool answered neither text nor json")
		}
		a := Answer{Text: text, JSON: p.JSON, Engine: Name, Citations: []Citation{}, SessionID: firstNonEmpty(p.SessionID, p.ChatID, q.SessionID)}
		for _, d := range p.SourceDocuments {
			a.Citations = append(a.Citations, Citation{
				ChunkID:  firstString(d.Metadata, "chunk_id", "chunkId", "id"),
				Source:   firstString(d.Metadata, "source", "source_name", "sourceName"),
				Document: firstString(d.Metadata, "document", "title", "filename", "source"),
				Excerpt:  excerpt(d.PageContent),
			})
		}
		return a, nil
	}
	return Answer{}, last
}

// flowiseKeys are the fields Flowise adds to every prediction's answer, beside the flow's own.
var flowiseKeys = []string{"text", "json", "question", "chatId", "chatMessageId", "sessionId", "isStreamValid",
	"memoryType", "sourceDocuments", "usedTools", "fileAnnotations", "agentReasoning", "artifacts",
	"followUpPrompts", "executionId", "agentFlowExecutedData", "action", "flowVariables"}

// ownFields is the flow's own part of an answer with neither text nor json, nil when there is
// none: an ending Custom JS Function node that returns an object has Flowise 3 spread its fields
// into the answer itself ({"answer": "...", "question": ..., "chatId": ...}).
func ownFields(body []byte) map[string]any {
	var m map[string]any
	if json.Unmarshal(body, &m) != nil {
		return nil
	}
	for _, k := range flowiseKeys {
		delete(m, k)
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// refused says whether the tool turned the request itself down, so that asking again cannot help:
// a 4xx but 408 and 429, and Flowise 3's answer to a missing or wrong API key, which is a 500
// "Error: predictionsServices.buildChatflow - Unauthorized" (recorded in testdata/flowise).
func refused(status int, message string) bool {
	if status == http.StatusInternalServerError && strings.HasSuffix(message, " - Unauthorized") {
		return true
	}
	return status >= 400 && status < 500 && status != http.StatusTooManyRequests && status != http.StatusRequestTimeout
}

// toolMessage is the message of a tool's error body: Flowise's {message} (or {error}), cut short.
func toolMessage(body []byte) string {
	var e struct {
		Message string `json:"message"`
		Error   any    `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	m := strings.TrimSpace(e.Message)
	if s, ok := e.Error.(string); ok && m == "" {
		m = strings.TrimSpace(s)
	}
	if r := []rune(m); len(r) > 300 {
		m = string(r[:300]) + "…"
	}
	return m
}

// jsonText is the text of a structured-output answer: its answer, text, output or response
// string when it has one, else the JSON itself.
func jsonText(v any) string {
	if v == nil {
		return ""
	}
	if m, ok := v.(map[string]any); ok {
		for _, k := range []string{"answer", "text", "output", "response"} {
			if s, ok := m[k].(string); ok && strings.TrimSpace(s) != "" {
				return strings.TrimSpace(s)
			}
		}
	}
	if s, ok := v.(string); ok {
		return strings.TrimSpace(s)
	}
	b, err := json.Marshal(v)
	if err != nil || string(b) == "{}" || string(b) == "null" {
		return ""
	}
	return string(b)
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// fallback is the local prompt template over the knowledge base.
func fallback(ctx context.Context, opts Options, question string, search SearchFunc) (Answer, error) {
	a := Answer{Engine: "template", Citations: []Citation{}}
	if search == nil {
		a.Text = NoBasis
		return a, nil
	}
	hits, err := search(ctx, question, opts.TopK)
	if err != nil {
		if ctx.Err() != nil {
			return a, errcode.E("chatflow.fallback", errcode.WorkflowCancelled, "the question was cancelled", ctx.Err())
		}
		return a, errcode.E("chatflow.fallback", errcode.Chatflow, "the chatflow tool is down and the knowledge base could not be searched", err)
	}
	if len(hits) == 0 {
		a.Text = NoBasis
		return a, nil
	}
	for _, h := range hits {
		a.Citations = append(a.Citations, Citation{ChunkID: h.ChunkID, Source: h.SourceName, Document: h.Document, Excerpt: excerpt(h.ChunkText)})
	}
	if opts.GenerateFunc != nil {
		res, err := opts.GenerateFunc(ctx, &engine.GenerateRequest{System: systemPrompt, Prompt: prompt(question, hits), MaxTokens: 600})
		if err == nil && res != nil && res.OK && strings.TrimSpace(res.Text) != "" {
			a.Text, a.TokensUsed, a.CostUSD = strings.TrimSpace(res.Text), res.TokensUsed, res.CostUSD
			return a, nil
		}
		if err != nil {
			opts.Logger.Warn("fallback model failed; answering extractively", "error", err)
		}
	}
	a.Text = extractive(question, hits)
	return a, nil
}

const systemPrompt = "You answer questions for a short-video content team using only the numbered knowledge-base " +
	"fragments you are given. Cite every claim with its fragment number, like [#1]. If the fragments " +
	"do not contain the answer, say that no citable basis was found and that the answer is uncertain. Never add " +
	"facts that are not in the fragments."

func prompt(question string, hits []engine.SearchHit) string {
	var b strings.Builder
	b.WriteString("Fragments:\n")
	for i, h := range hits {
		fmt.Fprintf(&b, "[#%d] (%s) %s\n", i+1, h.SourceName, strings.TrimSpace(h.ChunkText))
	}
	b.WriteString("\nQuestion: ")
	b.WriteString(question)
	b.WriteString("\nAnswer with citations:")
	return b.String()
}

// extractive answers with the knowledge base's extractive answerer (extract.Extractive, the one
// /api/knowledge/ask quotes through) over hits that already ground an answer (the search asks the
// host for those: engine.SearchRequest.Ground), each quoted sentence cited by number.
func extractive(question string, hits []engine.SearchHit) string {
	texts := make([]string, len(hits))
	heads := make([]string, len(hits))
	for i, h := range hits {
		texts[i], heads[i] = h.ChunkText, h.Heading
	}
	text := extract.Extractive{Headings: heads}.Answer(question, texts)
	if text == "" {
		return NoBasis
	}
	return "From the knowledge base: " + engine.NormalizeCitations(text, len(hits))
}

func excerpt(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 300 {
		return string(r[:300]) + "…"
	}
	return s
}

func firstString(m map[string]any, keys ...string) string {
	for _, k := range keys {
		switch v := m[k].(type) {
		case string:
			if v != "" {
				return v
			}
		case float64:
			return fmt.Sprint(v)
		}
	}
	return ""
}
