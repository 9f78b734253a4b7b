package api

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/auth"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/sdk/errcode"
)

const (
	headerRequestID  = "X-Request-Id"
	headerAPIVersion = "X-API-Version"
	localRequestID   = "request_id"
	localPrincipal   = "principal"
	localCredential  = "issues_credential"
)

// requestHeaders gives every response X-Request-Id (the client's, when it sent a sane one) and
// X-API-Version.
func (s *Server) requestHeaders(c *fiber.Ctx) error {
	id := c.Get(headerRequestID)
	if !saneRequestID(id) {
		id = uuid.NewString()
	}
	c.Locals(localRequestID, id)
	setStandardHeaders(c)
	return c.Next()
}

func saneRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, r := range id {
		if r < 0x21 || r > 0x7e {
			return false
		}
	}
	return true
}

func requestID(c *fiber.Ctx) string {
	if id, ok := c.Locals(localRequestID).(string); ok {
		return id
	}
	return ""
}

// setStandardHeaders (re)sets the headers every response carries; the error handler calls it too,
// since errors raised before the middleware (an over-large body) skip it. nosniff: a browser
// opening an answer (JSON whose strings a user wrote, a file) never sniffs it into HTML to run.
func setStandardHeaders(c *fiber.Ctx) {
	id := requestID(c)
	if id == "" {
		id = c.Get(headerRequestID)
		if !saneRequestID(id) {
			id = uuid.NewString()
		}
		c.Locals(localRequestID, id)
	}
	c.Set(headerRequestID, id)
	c.Set(headerAPIVersion, "v1")
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
}

// recoverPanics turns a handler panic into a logged 500 in the envelope.
func (s *Server) recoverPanics(c *fiber.Ctx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			s.Log.Error("panic in handler", "request_id", requestID(c), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = errcode.E("api", errcode.Unknown, "", fmt.Errorf("panic: %v", r))
		}
	}()
	return c.Next()
}

// answeredStatus is the status of the answer to a request whose handlers returned err: the error's
// when they failed (the error handler writes it after the middlewares), else the response's.
func answeredStatus(c *fiber.Ctx, err error) int {
	if err != nil {
		return toCoded(err).HTTPStatus()
	}
	return c.Response().StatusCode()
}

// logRequests writes one line per request.
func (s *Server) logRequests(c *fiber.Ctx) error {
	start := time.Now()
	err := c.Next()
	status := answeredStatus(c, err)
	user := ""
	if p := principal(c); p != nil {
		user = p.UserID
	}
	s.Log.Info("request", "request_id", requestID(c), "method", c.Method(), "route", c.Route().Path,
		"status", status, "latency_ms", math.Round(float64(time.Since(start).Microseconds()))/1000, "user_id", user)
	return err
}

// authenticate requires a valid bearer credential of a live account (an access token: its role is
// the account's now, read at most AccountTTL ago) or a live API key.
func (s *Server) authenticate(c *fiber.Ctx) error {
	h := c.Get(fiber.HeaderAuthorization)
	tok, found := strings.CutPrefix(h, "Bearer ")
	if !found || strings.TrimSpace(tok) == "" {
		return errcode.New(errcode.Authentication, "Missing bearer token")
	}
	tok = strings.TrimSpace(tok)
	if auth.IsTool(tok) {
		return s.authenticateTool(c, tok)
	}
	if auth.IsKey(tok) {
		p, err := s.Auth.VerifyKey(s.ctx(c), tok)
		if err != nil {
			return err
		}
		if p.IsAutomation() && !automationRoute(c.Path()) {
			return errcode.New(errcode.Authorization, "An automation key may call only the scheduler API, the orchestrator and the notification routes")
		}
		c.Locals(localPrincipal, p)
		return c.Next()
	}
	p, err := s.Auth.VerifyAccount(s.ctx(c), tok)
	if err != nil {
		return err
	}
	c.Locals(localPrincipal, p)
	return c.Next()
}

// authenticateTool admits a tool credential (auth.ToolGrant: what a run hands its external tool)
// to the routes that read knowledge, and only while its run goes on: every other route refuses it.
func (s *Server) authenticateTool(c *fiber.Ctx, tok string) error {
	p, err := s.Auth.VerifyTool(s.ctx(c), tok)
	if err != nil {
		return err
	}
	// The route first: a refusal costs no database read.
	if !toolRoute(c.Method(), c.Path()) {
		return errcode.New(errcode.Authorization, "A tool credential may call only POST /api/knowledge/context and /api/knowledge/search")
	}
	if s.Runs != nil {
		if err := s.Runs.CheckGrant(s.ctx(c), p); err != nil {
			return err
		}
	}
	c.Locals(localPrincipal, p)
	return c.Next()
}

// toolRoute reports whether a tool credential may call method and path: reading its owner's
// knowledge (context and search), nothing that writes or reaches another resource.
func toolRoute(method, path string) bool {
	switch path {
	case "/api/knowledge/context":
		return method == fiber.MethodPost
	case "/api/knowledge/search":
		return method == fiber.MethodPost || method == fiber.MethodGet
	}
	return false
}

// automationRoute reports whether an automation-scope key may call path: the scheduler API, the
// orchestrator and the event test routes (DECISIONS.md has no wider service role).
func automationRoute(path string) bool {
	switch path {
	case "/api/orchestrator/run", "/api/webhooks/test-notification", "/api/webhooks/notification-status":
		return true
	}
	return strings.HasPrefix(path, "/api/scheduler/")
}

func principal(c *fiber.Ctx) *auth.Principal {
	p, _ := c.Locals(localPrincipal).(*auth.Principal)
	return p
}

// ---------------------------------------------------------------------------------------------
// Rate limits: fixed one-minute windows, in memory (per host).

type limiters struct {
	user, addr *window
}

func newLimiters(perUser, perAddr int) *limiters {
	return &limiters{user: newWindow(perUser, time.Minute), addr: newWindow(perAddr, time.Minute)}
}

type window struct {
	mu     sync.Mutex
	limit  int
	span   time.Duration
	counts map[string]*slot
	sweep  time.Time
}

type slot struct {
	n     int
	reset time.Time
}

func newWindow(limit int, span time.Duration) *window {
	return &window{limit: limit, span: span, counts: map[string]*slot{}}
}

// take counts one request of key; when over the limit it returns the seconds to wait.
func (w *window) take(key string, now time.Time) (retryAfter int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if now.After(w.sweep) { // drop finished windows now and then, so the map stays small
		for k, s := range w.counts {
			if now.After(s.reset) {
				delete(w.counts, k)
			}
		}
		w.sweep = now.Add(w.span)
	}
	s := w.counts[key]
	if s == nil || now.After(s.reset) {
		s = &slot{reset: now.Add(w.span)}
		w.counts[key] = s
	}
	s.n++
	if s.n > w.limit {
		return int(math.Ceil(s.reset.Sub(now).Seconds()))
	}
	return 0
}

func rateLimited(retryAfter int) error {
	e := errcode.New(errcode.RateLimitExceeded, "Too many requests, retry later")
	e.RetryAfter = max(retryAfter, 1)
	return e
}

func (s *Server) userRateLimit(c *fiber.Ctx) error {
	if ra := s.limits.user.take(principal(c).ID(), time.Now()); ra > 0 {
		return rateLimited(ra)
	}
	return c.Next()
}

func (s *Server) authRateLimit(c *fiber.Ctx) error {
	if ra := s.limits.addr.take(c.IP(), time.Now()); ra > 0 {
		return rateLimited(ra)
	}
	return c.Next()
}

// ---------------------------------------------------------------------------------------------
// Idempotency-Key: the first answer to a POST is stored for 24 h and replayed to repeats of the
// same caller (user, or API key), except an answer that holds a credential (issuesCredential).

const idempotencyTTL = 24 * time.Hour

var errAlreadyIssued = errcode.New(errcode.Validation,
	"This Idempotency-Key already issued a credential, which is shown only once; it is not replayed").WithStatus(fiber.StatusConflict)

// issuesCredential marks a route whose answer holds a credential (an API key, a token): its answer
// is never kept for an Idempotency-Key replay (issue 37).
func issuesCredential(c *fiber.Ctx) error {
	c.Locals(localCredential, true)
	return c.Next()
}

func (s *Server) idempotency(c *fiber.Ctx) error {
	key := c.Get("Idempotency-Key")
	if c.Method() != fiber.MethodPost || key == "" {
		return c.Next()
	}
	if _, err := uuid.Parse(key); err != nil {
		return errcode.Invalid("Idempotency-Key", "must be a UUID")
	}
	p := principal(c)
	sum := sha256.New()
	sum.Write([]byte(c.Method() + " " + c.OriginalURL() + "\n"))
	if err := writeBody(c, sum); err != nil {
		return fmt.Errorf("api: idempotency: read the request: %w", err)
	}
	rec := &store.IdempotentResponse{UserID: p.ID(), Key: key, RequestHash: hex.EncodeToString(sum.Sum(nil)),
		HeldBy: s.Holder, Lease: s.Config.Lease}
	ctx := s.ctx(c)
	old, err := s.Store.ReserveIdempotencyKey(ctx, rec, time.Now().Add(-idempotencyTTL))
	if errors.Is(err, store.ErrConflict) {
		switch {
		case old.RequestHash != rec.RequestHash:
			return errcode.New(errcode.Validation, "Idempotency-Key was used with a different request").WithStatus(fiber.StatusConflict)
		case old.Status == 0:
			return errcode.New(errcode.Validation, "A request with this Idempotency-Key is still in progress").WithStatus(fiber.StatusConflict)
		}
		c.Set("Idempotent-Replayed", "true")
		if old.ContentType != "" {
			c.Set(fiber.HeaderContentType, old.ContentType)
		}
		return c.Status(old.Status).Send(old.Body)
	}
	if err != nil {
		return fmt.Errorf("api: idempotency: %w", err)
	}
	if err := c.Next(); err != nil {
		if herr := s.handleError(c, err); herr != nil {
			return herr
		}
	}
	rec.Status = c.Response().StatusCode()
	if rec.Status >= 500 {
		return s.Store.ReleaseIdempotencyKey(ctx, rec.UserID, key)
	}
	rec.Body = append([]byte(nil), c.Response().Body()...)
	rec.ContentType = string(c.Response().Header.ContentType())
	if issued, _ := c.Locals(localCredential).(bool); issued && rec.Status < 400 {
		// A credential is shown once and stored hashed: the answer that holds it is not kept.
		// A repeat gets this 409 instead, and does not issue a second one.
		rec.Status = fiber.StatusConflict
		rec.ContentType = fiber.MIMEApplicationJSON
		if rec.Body, err = errorBytes(errAlreadyIssued); err != nil {
			return fmt.Errorf("api: idempotency: %w", err)
		}
	}
	if err := s.Store.CompleteIdempotencyKey(ctx, rec); err != nil {
		s.Log.Error("idempotency: store answer", "err", err.Error())
	}
	return nil
}
