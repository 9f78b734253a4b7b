package engine

import (
	"context"
	"encoding/json"

	"github.com/reelforge/reelforge/sdk/errcode"
)

// Capabilities an engine may declare in Info.Capabilities. The host calls Callback and Cancel only
// on engines that declare them, so an engine without them may leave those methods to Base.
const (
	// CapCallbacks: the engine's Callback interprets the callbacks of its jobs (its engine entry's
	// callback kind is graph or automation).
	CapCallbacks = "callbacks"
	// CapCancel: the engine's Cancel stops work it started outside a Run call.
	CapCancel = "cancel"
	// CapToolHealth: the engine's Health checks its external tool; a failing check means the tool
	// is down (the host then reports the engine degraded), not that the plugin is.
	CapToolHealth = "tool_health"
)

// ToolUnhealthy is the Health error of a CapToolHealth engine whose tool answers HTTP but whose
// health route did not answer 2xx (status): the host reports the engine degraded, with msg, yet
// still hands it runs, since a tool speaking only the project's protocol may have no health route
// (a run the tool then refuses goes to the fallback with the tool's own answer). A tool that does
// not answer at all is an ordinary error: its runs go to the fallback at once.
func ToolUnhealthy(op string, code errcode.Code, msg string, status int) error {
	return &errcode.Error{Op: op, Code: code, Msg: msg, Details: map[string]any{toolStatusKey: status}}
}

const toolStatusKey = "tool_status"

// ToolAnswers reports whether err, from an engine's Health, is ToolUnhealthy's: the tool answers.
// It reads the error's details, so it holds on both sides of the plugin protocol.
func ToolAnswers(err error) bool {
	e := errcode.As(err)
	if e == nil || e.Details == nil {
		return false
	}
	raw, jerr := json.Marshal(e.Details)
	if jerr != nil {
		return false
	}
	var d map[string]any
	if json.Unmarshal(raw, &d) != nil {
		return false
	}
	_, ok := d[toolStatusKey].(float64)
	return ok
}

// Base gives an engine the methods it does not need: embed it and write Info and Run only.
// Callback answers WORKFLOW_INVALID_STATE (an engine that takes callbacks must declare
// CapCallbacks and implement it), Cancel does nothing (Run's context is cancelled anyway), and
// Health answers nil.
type Base struct{}

// Callback refuses: this engine takes no callbacks.
func (Base) Callback(context.Context, Host, *CallbackRequest) (*RunResult, error) {
	return nil, errcode.New(errcode.WorkflowInvalidState, "this engine takes no callbacks")
}

// Cancel does nothing: a run's work ends with its Run call's context.
func (Base) Cancel(context.Context, *CancelRequest) error { return nil }

// Health answers nil: the engine is up when its process answers.
func (Base) Health(context.Context) error { return nil }
