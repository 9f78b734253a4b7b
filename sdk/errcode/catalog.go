// Package errcode is the one error catalogue of Reelforge, shared by the host and by plugins.
//
// Every failure that reaches a client or crosses the plugin boundary carries a Code. The catalogue
// maps each Code to its errno, its HTTP status (shared/spec/DECISIONS.md), its gRPC code and a
// public default message. Codes are stable strings: add, never rename or reuse.
package errcode

import (
	"net/http"

	"google.golang.org/grpc/codes"
)

// Code is the wire name of an error, as SPEC.md's catalogue spells it.
type Code string

// The codes of SPEC.md's catalogue.
const (
	Unknown                 Code = "UNKNOWN_ERROR"
	Validation              Code = "VALIDATION_ERROR"
	Authentication          Code = "AUTHENTICATION_ERROR"
	Authorization           Code = "AUTHORIZATION_ERROR"
	NotFound                Code = "NOT_FOUND"
	RateLimitExceeded       Code = "RATE_LIMIT_EXCEEDED"
	WorkflowNotFound        Code = "WORKFLOW_NOT_FOUND"
	WorkflowAlreadyRunning  Code = "WORKFLOW_ALREADY_RUNNING"
	WorkflowTimeout         Code = "WORKFLOW_TIMEOUT"
	WorkflowCancelled       Code = "WORKFLOW_CANCELLED"
	WorkflowStepFailed      Code = "WORKFLOW_STEP_FAILED"
	WorkflowInvalidState    Code = "WORKFLOW_INVALID_STATE"
	AgentNotFound           Code = "AGENT_NOT_FOUND"
	AgentExecutionFailed    Code = "AGENT_EXECUTION_FAILED"
	AgentTimeout            Code = "AGENT_TIMEOUT"
	AgentInvalidOutput      Code = "AGENT_INVALID_OUTPUT"
	AgentToolFailed         Code = "AGENT_TOOL_FAILED"
	ExternalService         Code = "EXTERNAL_SERVICE_ERROR"
	AutomationWebhookFailed Code = "AUTOMATION_WEBHOOK_FAILED"
	GraphRunner             Code = "GRAPH_RUNNER_ERROR"
	Chatflow                Code = "CHATFLOW_ERROR"
	MusicAPI                Code = "MUSIC_API_ERROR"
	VideoGen                Code = "VIDEO_GEN_ERROR"
	CallbackVerification    Code = "CALLBACK_VERIFICATION_FAILED"
	ResourceExhausted       Code = "RESOURCE_EXHAUSTED"
	QuotaExceeded           Code = "QUOTA_EXCEEDED"
	CreditsInsufficient     Code = "CREDITS_INSUFFICIENT"
	StorageFull             Code = "STORAGE_FULL"
)

// Entry is one row of the catalogue.
type Entry struct {
	Errno   int
	HTTP    int
	GRPC    codes.Code
	Message string
}

var catalog = map[Code]Entry{
	Unknown:                 {1000, http.StatusInternalServerError, codes.Unknown, "Internal error"},
	Validation:              {1001, http.StatusBadRequest, codes.InvalidArgument, "Validation failed"},
	Authentication:          {1002, http.StatusUnauthorized, codes.Unauthenticated, "Authentication required"},
	Authorization:           {1003, http.StatusForbidden, codes.PermissionDenied, "Permission denied"},
	NotFound:                {1004, http.StatusNotFound, codes.NotFound, "Resource not found"},
	RateLimitExceeded:       {1005, http.StatusTooManyRequests, codes.ResourceExhausted, "Too many requests"},
	WorkflowNotFound:        {2000, http.StatusNotFound, codes.NotFound, "Workflow not found"},
	WorkflowAlreadyRunning:  {2001, http.StatusConflict, codes.AlreadyExists, "Workflow already running"},
	WorkflowTimeout:         {2002, http.StatusGatewayTimeout, codes.DeadlineExceeded, "Workflow timed out"},
	WorkflowCancelled:       {2003, http.StatusConflict, codes.Canceled, "Workflow cancelled"},
	WorkflowStepFailed:      {2004, http.StatusInternalServerError, codes.Internal, "Workflow step failed"},
	WorkflowInvalidState:    {2005, http.StatusConflict, codes.FailedPrecondition, "Workflow state does not allow this"},
	AgentNotFound:           {3000, http.StatusInternalServerError, codes.NotFound, "Agent not found"},
	AgentExecutionFailed:    {3001, http.StatusInternalServerError, codes.Internal, "Agent execution failed"},
	AgentTimeout:            {3002, http.StatusInternalServerError, codes.DeadlineExceeded, "Agent timed out"},
	AgentInvalidOutput:      {3003, http.StatusInternalServerError, codes.Internal, "Agent output is malformed"},
	AgentToolFailed:         {3004, http.StatusInternalServerError, codes.Internal, "Agent tool call failed"},
	ExternalService:         {4000, http.StatusBadGateway, codes.Unavailable, "External service error"},
	AutomationWebhookFailed: {4001, http.StatusBadGateway, codes.Unavailable, "Automation webhook call failed"},
	GraphRunner:             {4002, http.StatusBadGateway, codes.Unavailable, "Graph runner error"},
	Chatflow:                {4003, http.StatusBadGateway, codes.Unavailable, "Chatflow call failed"},
	MusicAPI:                {4004, http.StatusBadGateway, codes.Unavailable, "Music generator error"},
	VideoGen:                {4005, http.StatusBadGateway, codes.Unavailable, "Video generator error"},
	CallbackVerification:    {4006, http.StatusUnauthorized, codes.Unauthenticated, "Callback signature verification failed"},
	ResourceExhausted:       {5000, http.StatusServiceUnavailable, codes.ResourceExhausted, "Resource exhausted"},
	QuotaExceeded:           {5001, http.StatusTooManyRequests, codes.ResourceExhausted, "Quota exceeded"},
	CreditsInsufficient:     {5002, http.StatusPaymentRequired, codes.FailedPrecondition, "Credits insufficient"},
	StorageFull:             {5003, http.StatusInsufficientStorage, codes.ResourceExhausted, "Storage full"},
}

// Lookup returns the catalogue entry of c; an unknown code reads as Unknown.
func Lookup(c Code) Entry {
	if e, ok := catalog[c]; ok {
		return e
	}
	return catalog[Unknown]
}

// Known reports whether c is in the catalogue.
func Known(c Code) bool {
	_, ok := catalog[c]
	return ok
}

// Codes returns every code of the catalogue, for tests and documentation.
func Codes() []Code {
	out := make([]Code, 0, len(catalog))
	for c := range catalog {
		out = append(out, c)
	}
	return out
}

// Errno returns the number of c (1001 for VALIDATION_ERROR).
func (c Code) Errno() int { return Lookup(c).Errno }

// HTTPStatus returns the HTTP status that goes with c.
func (c Code) HTTPStatus() int { return Lookup(c).HTTP }

// GRPC returns the gRPC status code that carries c across a process boundary.
func (c Code) GRPC() codes.Code { return Lookup(c).GRPC }
