// Package chatflow is the chatflow engine: it asks the external chatflow tool's prediction API and,
// when the tool is down or errors, answers from a local prompt template over the knowledge base,
// marked as degraded (SPEC.md Errors 7).
//
// Ask is the reusable core: the engine's Run calls it with the run's question and the knowledge base
// of engine.Host, and the host's /api/ai/chat route calls it with its own search. Run answers
// synchronously: completed with outputs {answer, citations, engine, degraded?} and one trace step
// `chatflow` (its Degraded field set when the fallback answered).
//
// Start at Ask, or New for the engine.
package chatflow

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/reelforge/reelforge/internal/outbound"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// Name is the engine name.
const Name = "chatflow"

// Version is the version of the chatflow engine.
const Version = "1.0.0"

// StepID is the trace step of a chatflow run.
const StepID = "chatflow"

// Defaults of Options (SPEC.md Limits: chatflow 30 s, 2 retries, fixed back-off).
const (
	DefaultTimeout      = 30 * time.Second
	DefaultRetries      = 2
	DefaultRetryBackoff = 500 * time.Millisecond
	DefaultTopK         = 5
)

// Options configure Ask and the Engine. The zero value is usable (no tool: always the fallback).
type Options struct {
	// Tool is the chatflow tool: its URL is Flowise's address or its API base (CHATFLOW_URL; see
	// apiBase), predictions are at {API base}/prediction/<id>; its Timeout bounds one prediction (0:
	// DefaultTimeout).
	outbound.Tool
	// APIKey is sent as `Authorization: Bearer <APIKey>` (CHATFLOW_API_KEY: the Flowise API key a
	// flow that requires one checks); empty: none.
	APIKey string
	// DefaultChatflowID is used by Run when the manifest's settings name no chatflow_id
	// (CHATFLOW_KB_ID).
	DefaultChatflowID string
	// OverrideConfig is sent as the prediction's overrideConfig when not empty.
	OverrideConfig map[string]any
	// Retries is how many times a failed prediction (network error, 5xx, 408, 429) is retried; 0
	// means DefaultRetries, a negative value none.
	Retries int
	// RetryBackoff is the fixed wait between attempts; 0 means DefaultRetryBackoff.
	RetryBackoff time.Duration
	// TopK is how many hits the fallback searches for; 0 means DefaultTopK.
	TopK int
	// GenerateFunc, when set, lets the fallback ask a language model over the numbered hits (Run
	// sets it to the Host's Generate); without it, or when it answers OK=false, the fallback is
	// extractive.
	GenerateFunc GenerateFunc
}

// WithDefaults is o with its zero fields at their defaults.
func (o Options) WithDefaults() Options {
	o.Tool = o.Tool.WithDefaults(DefaultTimeout)
	switch {
	case o.Retries == 0:
		o.Retries = DefaultRetries
	case o.Retries < 0:
		o.Retries = 0
	}
	if o.RetryBackoff <= 0 {
		o.RetryBackoff = DefaultRetryBackoff
	}
	if o.TopK <= 0 {
		o.TopK = DefaultTopK
	}
	return o
}

// Engine is the chatflow engine. It keeps no state between calls and is safe for concurrent use.
type Engine struct {
	opts Options
}

var _ engine.Engine = (*Engine)(nil)

// Build makes the chatflow engine from the settings of its registry entry
// (manifests/engines/chatflow.yaml: url, api_key, kb_chatflow_id): the plugin's main serves it with
// engine.ServeConfigured, and the host builds its in-process copy with it.
func Build(settings map[string]string, log *slog.Logger) engine.Engine {
	return New(Options{Tool: outbound.Tool{URL: settings["url"], Logger: log}, APIKey: settings["api_key"],
		DefaultChatflowID: settings["kb_chatflow_id"]})
}

// New returns a chatflow engine with opts.
func New(opts Options) *Engine { return &Engine{opts: opts.WithDefaults()} }

// Info describes the chatflow engine.
func (e *Engine) Info(context.Context) (*engine.Info, error) {
	return &engine.Info{Name: Name, Version: Version, APIVersion: engine.APIVersion, Capabilities: []string{"degraded_fallback", engine.CapToolHealth}}, nil
}

// Health checks the chatflow tool (outbound.Tool.Health) at its ping, {API base}/ping (Flowise's
// /api/v1/ping): VALIDATION_ERROR when no url is set, CHATFLOW_ERROR when it does not answer,
// engine.ToolUnhealthy when the ping answers other than 2xx.
func (e *Engine) Health(ctx context.Context) error {
	tool := e.opts.Tool
	if tool.URL != "" {
		tool.URL, tool.HealthPath = apiBase(ctx, e.opts), "/ping"
	}
	return tool.Health(ctx, "chatflow.Health", errcode.Chatflow,
		"url is not set (CHATFLOW_URL)", "the chatflow tool does not answer")
}

// Vars are the flow variables both paths (chatflow runs and /api/ai/chat) send: whose knowledge
// the flow is about (the knowledge chatflow calls /api/knowledge/context with them).
func Vars(userID, projectID string) map[string]any {
	v := map[string]any{}
	if userID != "" {
		v["user_id"] = userID
	}
	if projectID != "" {
		v["project_id"] = projectID
	}
	return v
}

// Cancel is a no-op: a chatflow run does no work outside its Run call.
func (e *Engine) Cancel(context.Context, *engine.CancelRequest) error { return nil }

// Callback is not used: the chatflow tool answers synchronously.
func (e *Engine) Callback(context.Context, engine.Host, *engine.CallbackRequest) (*engine.RunResult, error) {
	return nil, errcode.New(errcode.WorkflowInvalidState, "the chatflow engine takes no callbacks: the tool answers synchronously")
}

type settings struct {
	ChatflowID     string         `json:"chatflow_id"`
	OverrideConfig map[string]any `json:"override_config"`
}

// sessionKeys are the run inputs that may name the conversation.
var sessionKeys = []string{"session_id", "sessionId", "chatId"}

// questionKeys are the run inputs that may hold the question, in order of preference.
var questionKeys = []string{"question", "query", "message", "topic", "summary"}

// Run asks the question of the run's inputs (question, query, message, topic or summary) and
// completes with the answer. See the package documentation.
func (e *Engine) Run(ctx context.Context, h engine.Host, req *engine.RunRequest) (*engine.RunResult, error) {
	var set settings
	if err := engine.DecodeRun(req, h, Name, &set); err != nil {
		return nil, err
	}
	if set.ChatflowID == "" {
		set.ChatflowID = e.opts.DefaultChatflowID
	}
	question := ""
	for _, k := range questionKeys {
		if s, ok := req.Inputs[k].(string); ok && strings.TrimSpace(s) != "" {
			question = s
			break
		}
	}
	if question == "" {
		return nil, errcode.Invalid("question", "is required (or topic, or summary)")
	}
	opts := e.opts
	opts.GenerateFunc = h.Generate
	opts.OverrideConfig = set.OverrideConfig
	q := Question{Text: question, ChatflowID: set.ChatflowID, Vars: Vars(req.User.UserID, req.Project.ProjectID),
		Credential: req.Credential, HostURL: req.CallbackURL}
	for _, k := range sessionKeys {
		if s, ok := req.Inputs[k].(string); ok && strings.TrimSpace(s) != "" {
			q.SessionID = strings.TrimSpace(s)
			break
		}
	}
	// The fallback's search is for an answer: the host keeps the hits that ground one, by the rule
	// of /api/knowledge/ask, so the run refuses where the route refuses.
	search := func(ctx context.Context, q string, k int) ([]engine.SearchHit, error) {
		return h.Search(ctx, &engine.SearchRequest{UserID: req.User.UserID, ProjectID: req.Project.ProjectID, Query: q, TopK: k, Ground: true})
	}
	start := e.opts.Now().UTC()
	a, _, err := Ask(ctx, opts, q, search)
	if err != nil {
		return nil, err
	}
	end := e.opts.Now().UTC()
	d := float64(end.Sub(start).Milliseconds())
	out := a.Map()
	step := engine.TraceStep{StepID: StepID, StepName: "Chatflow answer", Agent: "chatflow_tool", Status: engine.StepCompleted,
		Inputs: map[string]any{"question": question, "chatflow_id": set.ChatflowID}, Outputs: out,
		StartedAt: &start, CompletedAt: &end, DurationMS: &d, Engine: Name, Degraded: a.Degraded}
	if a.TokensUsed > 0 {
		step.TokensUsed = &a.TokensUsed
	}
	if a.CostUSD > 0 {
		step.CostUSD = &a.CostUSD
	}
	if err := h.ReportStep(ctx, req.RunID, step); err != nil {
		return nil, err
	}
	return &engine.RunResult{Status: engine.StatusCompleted, Outputs: out}, nil
}
