package api

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	"github.com/gofiber/fiber/v2"

	"github.com/reelforge/reelforge/host/runs"

	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// callbackOperations declares the inbound callbacks of external executors (typed: operations.go),
// one operation a callback kind (engine.CallbackPath). They are public (no bearer token): each
// request is authenticated by its X-Signature instead (DECISIONS.md, Inbound callbacks), checked
// on the raw body before the body is read. The bodies' types document what the host reads; the
// run service reads the signed bytes themselves (an engine's payload is its own).
func (s *Server) callbackOperations(signed huma.API) {
	const tag = "Callbacks"
	before := []fiber.Handler{s.verifyCallback}
	register(signed, op{Method: "POST", Path: engine.CallbackPathGraph, Tag: tag, Summary: "Agent graph runner callback",
		Errors: []int{404, 410}, Desc: callbackDesc, Before: before}, callbackHandler[graphCallback](s, engine.CallbackGraph))
	register(signed, op{Method: "POST", Path: engine.CallbackPathAutomation, Tag: tag, Summary: "Workflow automation tool callback",
		Errors: []int{404, 410}, Desc: callbackDesc, Before: before}, callbackHandler[automationCallback](s, engine.CallbackAutomation))
	register(signed, op{Method: "POST", Path: engine.CallbackPathAI, Tag: tag, Summary: "Generator callback (music, video, speech, link parsing)",
		Errors: []int{404, 410}, Desc: callbackDesc, Before: before}, callbackHandler[aiCallback](s, engine.CallbackAI))
}

// callbackDesc is what every callback route does with progress and with a timed-out job.
const callbackDesc = "A `running` (or `pending`, `accepted`) callback reports progress and moves the job's deadline by its type's timeout: " +
	"a job times out only after a silence longer than that. A callback for a job that timed out answers 410 WORKFLOW_TIMEOUT: " +
	"its executor should stop the work."

// VerifySignature reports whether header is `sha256=<hex HMAC-SHA256 of body>` under secret.
func VerifySignature(secret string, body []byte, header string) bool {
	if secret == "" {
		return false
	}
	hexSig, ok := strings.CutPrefix(strings.TrimSpace(header), "sha256=")
	if !ok {
		return false
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hmac.Equal(got, mac.Sum(nil))
}

// verifyCallback refuses a callback over the body limit (413) or without a valid signature
// (401 CALLBACK_VERIFICATION_FAILED) before its body is read.
func (s *Server) verifyCallback(c *fiber.Ctx) error {
	if len(c.Body()) > s.Config.BodyLimit {
		return tooLarge()
	}
	if !VerifySignature(s.Config.CallbackSecret, c.Body(), c.Get("X-Signature")) {
		return errcode.New(errcode.CallbackVerification, "Callback signature verification failed")
	}
	return c.Next()
}

// The callback bodies, as their executors send them. Only job_id is required of them all; the
// run service reads the rest (a status it does not know is the job's failure).

type graphCallback struct {
	Body struct {
		RunID    string            `json:"run_id,omitempty"`
		JobID    string            `json:"job_id"`
		Status   string            `json:"status,omitempty" doc:"completed, failed or paused; running, pending or accepted report progress"`
		Outputs  json.RawMessage   `json:"outputs,omitempty"`
		Trace    []json.RawMessage `json:"trace,omitempty" doc:"the run's steps (TraceStep)"`
		Metadata jsonObject        `json:"metadata,omitempty" doc:"total_tokens, total_cost_usd, duration_ms"`
	}
}

type automationCallback struct {
	Body struct {
		JobID        string          `json:"job_id"`
		WorkflowName string          `json:"workflow_name,omitempty"`
		Status       string          `json:"status,omitempty"`
		Result       json.RawMessage `json:"result,omitempty" doc:"audio_url, duration, style, ..."`
	}
}

type aiCallback struct {
	Body struct {
		JobID  string          `json:"job_id"`
		Type   string          `json:"type,omitempty"`
		Status string          `json:"status,omitempty"`
		Result json.RawMessage `json:"result,omitempty" doc:"audio_url, cover_url, video_url, ..."`
	}
}

// callbackHandler serves one callback kind: the signed bytes go to the run service as they came.
func callbackHandler[I any](s *Server, kind string) func(context.Context, *I) (*Data[runs.CallbackResult], error) {
	return func(ctx context.Context, _ *I) (*Data[runs.CallbackResult], error) {
		rs, err := s.runService()
		if err != nil {
			return nil, err
		}
		res, err := rs.Callback(ctx, kind, requestBody(ctx))
		if err != nil {
			return nil, err
		}
		return answerData(*res)
	}
}
