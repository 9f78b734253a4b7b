package apidoc

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/reelforge/reelforge/sdk/errcode"
)

var tags = []M{
	{"name": "Operations", "description": "Health, Prometheus metrics and this document."},
	{"name": "Auth", "description": "Accounts and tokens (JWT HS256 access tokens, rotating refresh tokens)."},
	{"name": "Projects"}, {"name": "Tasks"},
	{"name": "Workflow", "description": "Runs: success answers carry `success` and their fields at the top level."},
	{"name": "Callbacks", "description": "Inbound callbacks of external executors, authenticated by signature."},
	{"name": "Scheduler"}, {"name": "Knowledge"}, {"name": "Content"}, {"name": "Strategy"},
	{"name": "Events", "description": "Outbound event notifications and the WebSocket."},
	{"name": "Admin", "description": "Service credentials (API keys), for admins."},
}

// Build returns the OpenAPI 3.1 document without its operations: its description, tags and the
// components every operation refers to (error responses, headers, security schemes). host/api
// adds the operations huma documents to it and serves the whole.
func Build() M {
	return M{
		"openapi": "3.1.0",
		"info": M{
			"title":       "Reelforge API",
			"version":     "v1",
			"description": description(),
		},
		"servers": []any{M{"url": "http://127.0.0.1:3001", "description": "a host on its default port"}},
		"tags":    tags,
		"paths":   M{},
		"components": M{
			"schemas":         withErrorCode(schemas()),
			"responses":       errorResponses(),
			"headers":         standardHeaders(),
			"parameters":      M{"IdempotencyKey": M{"name": "Idempotency-Key", "in": "header", "schema": uuid, "description": "the same key from the same user within 24 h replays the first answer (header Idempotent-Replayed: true); the same key with another body is a 409"}},
			"securitySchemes": securitySchemes(),
		},
	}
}

// OperationID names an operation by its method and path (Fiber or OpenAPI syntax): get_api_projects_id.
func OperationID(method, path string) string {
	s := strings.NewReplacer("/", "_", ":", "", "{", "", "}", "", "-", "_", ".", "_").Replace(strings.Trim(path, "/"))
	return strings.ToLower(method) + "_" + s
}

// IdempotencyKeyRef is the Idempotency-Key header parameter.
const IdempotencyKeyRef = "#/components/parameters/IdempotencyKey"

// TakesIdempotencyKey reports whether an operation accepts an Idempotency-Key: every
// authenticated POST does.
func TakesIdempotencyKey(method string, sec Security) bool {
	return method == http.MethodPost && sec == Bearer
}

// ErrorResponseRef is the error response of an HTTP status.
func ErrorResponseRef(status int) string { return "#/components/responses/" + errorName(status) }

// SuccessHeaders are the headers of every success answer.
func SuccessHeaders() M {
	return M{"X-Request-Id": M{"$ref": "#/components/headers/X-Request-Id"}, "X-API-Version": M{"$ref": "#/components/headers/X-API-Version"}}
}

// ErrorsOf is what decides an operation's error answers.
type ErrorsOf struct {
	Method, Path string
	Sec          Security
	HasBody      bool  // a JSON or form request body
	Extra        []int // the operation's own
}

// ErrorStatuses are the error answers of an operation: its security's usual ones plus its own.
func ErrorStatuses(op ErrorsOf) []int {
	var st []int
	switch op.Sec {
	case Bearer:
		st = []int{400, 401, 403, 429, 500} // 403: an automation key outside its scope
	case Public:
		st = []int{400, 429, 500}
		if strings.HasPrefix(op.Path, "/api/auth/") {
			st = append(st, 401)
		}
	case Callback:
		st = []int{400, 401, 404, 500}
	case File:
		st = []int{401, 403, 429, 500} // 403: a signed URL altered or expired
	}
	if op.Sec == Bearer && op.Method == http.MethodPost {
		st = append(st, 409) // an Idempotency-Key reused with another request
	}
	if op.HasBody && strings.HasPrefix(op.Path, "/api/") {
		st = append(st, 413) // BODY_LIMIT_BYTES, UPLOAD_LIMIT_BYTES
	}
	// The database's state (host/api/errors.go): 503 when it cannot be reached, has no connection
	// free or does not answer within DB_TIMEOUT_MS; 507 when a write finds its disk full.
	st = append(st, 503)
	if op.Method != http.MethodGet {
		st = append(st, 507)
	}
	st = append(st, op.Extra...)
	slices.Sort(st)
	return slices.Compact(st)
}

func errorName(status int) string { return "Error" + strconv.Itoa(status) }

// byStatus lists the codes that answer with each HTTP status: the catalogue's, plus the explicit
// overrides of DECISIONS.md (VALIDATION_ERROR as 409 for conflicts and 413 for large bodies) and
// WORKFLOW_TIMEOUT as 410 for a callback of a timed-out job.
func byStatus() map[int][]errcode.Code {
	out := map[int][]errcode.Code{
		http.StatusConflict:              {errcode.Validation},
		http.StatusRequestEntityTooLarge: {errcode.Validation},
		http.StatusGone:                  {errcode.WorkflowTimeout},
	}
	for _, c := range sortedCodes() {
		out[c.HTTPStatus()] = append(out[c.HTTPStatus()], c)
	}
	return out
}

func sortedCodes() []errcode.Code {
	codes := errcode.Codes()
	slices.SortFunc(codes, func(a, b errcode.Code) int { return a.Errno() - b.Errno() })
	return codes
}

func errorResponses() M {
	out := M{}
	for st, codes := range byStatus() {
		names := make([]string, len(codes))
		for i, c := range codes {
			names[i] = fmt.Sprintf("`%s` (%d)", c, c.Errno())
		}
		r := M{
			"description": http.StatusText(st) + ": " + strings.Join(names, ", "),
			"headers":     M{"X-Request-Id": M{"$ref": "#/components/headers/X-Request-Id"}, "X-API-Version": M{"$ref": "#/components/headers/X-API-Version"}},
			"content": M{"application/json": M{
				"schema":  ref("ErrorEnvelope"),
				"example": M{"success": false, "error": M{"code": string(codes[0]), "errno": codes[0].Errno(), "message": errcode.Lookup(codes[0]).Message}},
			}},
		}
		if st == http.StatusTooManyRequests {
			r["headers"].(M)["Retry-After"] = M{"schema": M{"type": "integer"}, "description": "seconds to wait"}
		}
		out[errorName(st)] = r
	}
	return out
}

func withErrorCode(s M) M {
	var vals []any
	var rows []string
	for _, c := range sortedCodes() {
		e := errcode.Lookup(c)
		vals = append(vals, string(c))
		rows = append(rows, fmt.Sprintf("| %s | %d | %d | %s |", c, e.Errno, e.HTTP, e.Message))
	}
	s["ErrorCode"] = M{"type": "string", "enum": vals, "description": "The error catalogue (sdk/errcode):\n\n| code | errno | HTTP | default message |\n|---|---|---|---|\n" +
		strings.Join(rows, "\n") + "\n\nVALIDATION_ERROR also answers 409 (conflict, Idempotency-Key reuse) and 413 (body or file over its limit)."}
	return s
}

func standardHeaders() M {
	return M{
		"X-Request-Id":  M{"schema": M{"type": "string"}, "description": "the client's X-Request-Id when it sent a sane one, else a new UUID"},
		"X-API-Version": M{"schema": M{"const": "v1"}},
	}
}

func securitySchemes() M {
	return M{
		"bearerAuth": M{"type": "http", "scheme": "bearer", "bearerFormat": "JWT",
			"description": "Access token from register, login or refresh: `Authorization: Bearer <token>`; 7 days. Or an API key (`rfk_...`, from `reelforge token create` or POST /api/admin/api-keys): long-lived until revoked; an automation key reaches only the scheduler API, the orchestrator and the notification routes (403 elsewhere)."},
		"callbackSignature": M{"type": "apiKey", "in": "header", "name": "X-Signature",
			"description": "`sha256=<hex HMAC-SHA256 of the raw request body with CALLBACK_SECRET>`; missing or wrong: 401 CALLBACK_VERIFICATION_FAILED (4006)."},
		"metricsToken": M{"type": "http", "scheme": "bearer",
			"description": "METRICS_TOKEN. When it is not set, /metrics is served only to direct loopback callers."},
		"tokenQuery": M{"type": "apiKey", "in": "query", "name": "token", "description": "access token on the WebSocket upgrade"},
		"signedURL": M{"type": "apiKey", "in": "query", "name": "signature",
			"description": "a file URL as the API hands it out, with `expires` and `signature` (HMAC-SHA256 over method, path and expiry): valid for FILE_URL_TTL; altered or expired: 403."},
	}
}

func description() string {
	return `The HTTP API of Reelforge, an AI short-video content platform backend.

**Success**: knowledge, scheduler, content and auth routes answer ` + "`{success: true, data: {...}}`" + ` with data's keys repeated at the top level; workflow routes answer ` + "`success`" + ` and their fields at the top level; listings answer ` + "`{success: true, data: [items], total, page, limit}`" + `.

**Failure**, every route: ` + "`{success: false, error: {code, errno, message, details?}}`" + ` (see the ErrorCode schema for the catalogue with HTTP statuses). An inaccessible or deleted project is 403 ` + "`Forbidden: project not accessible`" + `.

**Every response** carries X-Request-Id and X-API-Version: v1. Any authenticated POST accepts an Idempotency-Key.`
}
