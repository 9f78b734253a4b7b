package api

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/sdk/errcode"
)

var errNoRoute = errcode.New(errcode.NotFound, "Route not found")

// dbRetryAfter is the Retry-After, in seconds, of an answer the database's state caused (503
// RESOURCE_EXHAUSTED, 507 STORAGE_FULL): long enough not to hammer a struggling server.
const dbRetryAfter = 5

// envelope is the failure body of DECISIONS.md: {success:false, error:{code, errno, message, details?}}.
type envelope struct {
	Success bool      `json:"success"`
	Error   errorBody `json:"error"`
}

type errorBody struct {
	Code    errcode.Code `json:"code"`
	Errno   int          `json:"errno"`
	Message string       `json:"message"`
	Details any          `json:"details,omitempty"`
}

// handleError is Fiber's ErrorHandler, the only place that writes an error response. The cause of
// an error is logged, never sent.
func (s *Server) handleError(c *fiber.Ctx, err error) error {
	e := toCoded(err)
	status := e.HTTPStatus()
	if f := store.FaultOf(err); f != nil && (e.Code == errcode.ResourceExhausted || e.Code == errcode.StorageFull) {
		s.faults.note(s.Log, f, c.Path())
	} else if status >= 500 || e.Code == errcode.Unknown {
		s.Log.Error("request failed", "request_id", requestID(c), "method", c.Method(), "path", c.Path(),
			"code", e.Code, "err", err.Error())
	}
	setStandardHeaders(c)
	if e.RetryAfter > 0 {
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(e.RetryAfter))
	}
	c.Response().ResetBody()
	return c.Status(status).JSON(envelope{Error: errorBody{Code: e.Code, Errno: e.Code.Errno(), Message: e.Message(), Details: e.Details}})
}

// errorBytes is the failure body of e as handleError writes it, for an answer kept to be sent
// later in place of another (the replay of a credential's Idempotency-Key).
func errorBytes(e *errcode.Error) ([]byte, error) {
	return json.Marshal(envelope{Error: errorBody{Code: e.Code, Errno: e.Code.Errno(), Message: e.Message(), Details: e.Details}})
}

// faultLog rations the log of answers the database's state caused: while it is down every request
// answers 503, and a line each would bury the log (and fill a full disk further). One line at most
// every faultLogEvery, with how many answers it stands for.
type faultLog struct {
	mu   sync.Mutex
	last time.Time
	n    int
}

const faultLogEvery = 10 * time.Second

func (l *faultLog) note(log *slog.Logger, f *store.Fault, path string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	if time.Since(l.last) < faultLogEvery {
		return
	}
	log.Warn("requests answered while the database cannot serve", "cause", f.Cause, "requests", l.n, "path", path, "err", f.Error())
	l.n, l.last = 0, time.Now()
}

// latchFaults gives each request a store.WithFaultLatch context: once one of its database calls
// met a Fault (a silent or unreachable server), its further calls fail at once, so the request
// answers within one deadline rather than one per call.
func latchFaults(c *fiber.Ctx) error {
	c.SetUserContext(store.WithFaultLatch(c.UserContext()))
	return c.Next()
}

// toCoded turns any error into a catalogued one; Fiber's own errors keep their meaning.
func toCoded(err error) *errcode.Error {
	e := errcode.As(err)
	if f := store.FaultOf(err); f != nil && (e == nil || e.Code == errcode.Unknown) {
		// The database's state, however deep a service wrapped it: 507 for a full disk (nothing
		// was written), else 503; both worth retrying.
		out := errcode.E("", errcode.ResourceExhausted, "The database is unavailable ("+f.Cause+"); try again shortly", err)
		if errors.Is(f, store.ErrFull) {
			out = errcode.E("", errcode.StorageFull, "The database is out of space; nothing was written", err)
		}
		out.RetryAfter = dbRetryAfter
		return out
	}
	if e != nil {
		return e
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return errcode.E("", errcode.NotFound, "", err)
	case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrStale):
		return errcode.E("", errcode.Validation, "The resource changed or already exists", err).WithStatus(http.StatusConflict)
	}
	var fe *fiber.Error
	if errors.As(err, &fe) {
		switch fe.Code {
		case http.StatusNotFound, http.StatusMethodNotAllowed:
			return errNoRoute
		case http.StatusRequestEntityTooLarge:
			return tooLarge()
		case http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusUnsupportedMediaType,
			http.StatusRequestHeaderFieldsTooLarge:
			return errcode.New(errcode.Validation, "Bad request")
		case http.StatusRequestTimeout:
			return errcode.New(errcode.Validation, "Request timed out").WithStatus(http.StatusRequestTimeout)
		case http.StatusTooManyRequests:
			return errcode.New(errcode.RateLimitExceeded, "")
		case http.StatusUnauthorized:
			return errcode.New(errcode.Authentication, "")
		case http.StatusForbidden:
			return errcode.New(errcode.Authorization, "")
		case http.StatusServiceUnavailable:
			return errcode.New(errcode.ResourceExhausted, "Service unavailable")
		}
	}
	return errcode.E("", errcode.Unknown, "", err)
}

func tooLarge() *errcode.Error {
	return errcode.New(errcode.Validation, "Request body too large").WithStatus(http.StatusRequestEntityTooLarge)
}
