package outbound

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// HealthTimeout bounds the reachability check of Tool.Health.
const HealthTimeout = 2 * time.Second

// Tool is what an engine needs to drive one external tool: where it is, how to reach it, and the
// logger and clock of the engine. The Options of the graph, automation and chatflow engines embed it.
type Tool struct {
	// URL is the tool's base address (the engine's entry names its setting). Empty: the tool is not
	// configured.
	URL string
	// HTTPClient calls the tool; nil means a client without its own timeout (Timeout applies).
	HTTPClient *http.Client
	// Timeout bounds one call to the tool; 0 means the engine's default.
	Timeout time.Duration
	// Logger receives problems that do not fail a call; nil discards.
	Logger *slog.Logger
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// HealthPath is the tool's health route under URL (Flowise's /api/v1/ping, a LangGraph
	// server's /ok): Health calls the tool healthy only when it answers 2xx there. Empty: any
	// HTTP answer at URL will do (a tool with no health route).
	HealthPath string
}

// WithDefaults fills in what t leaves unset (a Timeout of 0 or less becomes timeout) and trims
// trailing slashes of URL, so that Join and URL+"/path" give one slash.
func (t Tool) WithDefaults(timeout time.Duration) Tool {
	if t.HTTPClient == nil {
		t.HTTPClient = &http.Client{}
	}
	if t.Timeout <= 0 {
		t.Timeout = timeout
	}
	if t.Logger == nil {
		t.Logger = slog.New(slog.DiscardHandler)
	}
	if t.Now == nil {
		t.Now = time.Now
	}
	t.URL = strings.TrimRight(t.URL, "/")
	return t
}

// Health is the tool check of an engine's Health (engine.CapToolHealth): VALIDATION_ERROR with the
// message unset when no URL is set, code (op, with the message down) when the tool does not answer
// within HealthTimeout: the host then reports the engine unconfigured or degraded and runs its
// workflows on the fallback; it does not restart the plugin for it. With a HealthPath, an answer
// there other than 2xx, or an HTML page, is engine.ToolUnhealthy: the engine is reported
// degraded, not ready.
func (t Tool) Health(ctx context.Context, op string, code errcode.Code, unset, down string) error {
	if t.URL == "" {
		return errcode.New(errcode.Validation, unset)
	}
	url := t.URL
	if t.HealthPath != "" {
		url = Join(t.URL, t.HealthPath)
	}
	ans, err := Reachable(ctx, t.HTTPClient, url, HealthTimeout)
	if err != nil {
		return errcode.E(op, code, down, err)
	}
	switch {
	case t.HealthPath == "":
	case !ans.OK():
		return engine.ToolUnhealthy(op, code, fmt.Sprintf("the tool answers, but GET %s answered %d, not 2xx: is the URL the tool's own address?", url, ans.Status), ans.Status)
	case ans.HTML():
		// A web UI's catch-all page, not the tool's API.
		return engine.ToolUnhealthy(op, code, fmt.Sprintf("GET %s answered a web page, not the tool's API: is the URL the API's address?", url), ans.Status)
	}
	return nil
}
