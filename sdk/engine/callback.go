package engine

import (
	"encoding/json"
	"slices"
)

// Callback kinds: which of the host's three signed callback routes a job comes back on. An
// engine's registry entry names the kind of its jobs (manifests/engines/<name>.yaml, callback:),
// and CallbackRequest.Kind says which route a callback came in on.
const (
	// CallbackGraph and CallbackAutomation: the job's callback goes to the engine's Callback,
	// which says what it means for the run.
	CallbackGraph      = "graph"
	CallbackAutomation = "automation"
	// CallbackAI: the callback resolves the job and the step awaiting it (Host.WaitJob) goes on.
	// The default kind.
	CallbackAI = "ai"
)

// The callback routes, relative to the host's callback base URL (CALLBACK_BASE_URL): where an
// external executor posts a job's callback, signed with CALLBACK_SECRET in X-Signature. The host
// serves them and the engines hand them out; this is the one place they are written.
const (
	CallbackPathGraph      = "/api/webhooks/graph-callback"
	CallbackPathAutomation = "/api/webhooks/automation-callback"
	CallbackPathAI         = "/api/webhooks/ai-callback"
)

// CallbackKinds are the callback kinds, one a route.
var CallbackKinds = []string{CallbackGraph, CallbackAutomation, CallbackAI}

// CallbackPath is the route of callback kind kind (CallbackPathAI for any other kind).
func CallbackPath(kind string) string {
	switch kind {
	case CallbackGraph:
		return CallbackPathGraph
	case CallbackAutomation:
		return CallbackPathAutomation
	}
	return CallbackPathAI
}

// GeneratorJobs are the job types a generator step may ask for (the generators plugin's):
// narration, music, video and link parsing.
var GeneratorJobs = []string{JobSpeech, JobMusic, JobVideogen, JobVideoparse}

// IsGeneratorJob reports whether jobs of type typ are generator jobs (GeneratorJobs).
func IsGeneratorJob(typ string) bool { return slices.Contains(GeneratorJobs, typ) }

// CallbackError is the error of a failed external run as a tool's callback carries it: an object
// {code, message, step_id?}, or a plain message string, which tools also send.
type CallbackError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	StepID  string `json:"step_id,omitempty"`
}

// UnmarshalJSON accepts an error object or a plain message string.
func (p *CallbackError) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		p.Message = s
		return nil
	}
	type plain CallbackError
	return json.Unmarshal(b, (*plain)(p))
}
