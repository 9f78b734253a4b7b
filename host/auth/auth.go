// Package auth registers and logs users in, issues access tokens (JWT HS256, 7 days) and rotating
// single-use refresh tokens (30 days, revoked as a family when one is reused), and verifies tokens.
package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"golang.org/x/crypto/bcrypt"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// Lifetimes of the tokens (DECISIONS.md, Authentication).
const (
	AccessTTL  = 7 * 24 * time.Hour
	RefreshTTL = 30 * 24 * time.Hour
)

// Principal is the authenticated caller of a request: a user with an access token, or a service
// credential (API key: Scope and KeyName set). An automation key has no UserID.
type Principal struct {
	UserID   string
	Role     string
	Username string
	Scope    string // "" for an access token, else the API key's scope (store.ScopeAutomation, ScopeAdmin)
	KeyID    string
	KeyName  string
	// ToolProject and ToolRun are a tool credential's grant (Scope ScopeTool): the project whose
	// knowledge it reads ("" for none) and the run it dies with ("" for an /api/ai/chat answer's).
	ToolProject string
	ToolRun     string
}

// IsTool reports whether the caller is a tool credential (auth.ToolGrant).
func (p *Principal) IsTool() bool { return p != nil && p.Scope == ScopeTool }

// IsAdmin reports whether the caller is an admin.
func (p *Principal) IsAdmin() bool { return p != nil && p.Role == store.RoleAdmin }

// IsAutomation reports whether the caller is an automation-scope API key.
func (p *Principal) IsAutomation() bool { return p != nil && p.Scope == store.ScopeAutomation }

// ActsForAll reports whether the caller acts for every user: an admin, or the automation tool
// (the scheduler API lists and starts every user's tasks for it).
func (p *Principal) ActsForAll() bool { return p.IsAdmin() || p.IsAutomation() }

// ID names the caller in what is kept per caller (the rate limit, Idempotency-Keys): the API key
// ("key:<id>") when it is one, so two keys never share, else the user.
func (p *Principal) ID() string {
	if p.KeyID != "" {
		return "key:" + p.KeyID
	}
	return p.UserID
}

// Store is what auth needs of the database.
type Store interface {
	CreateUser(ctx context.Context, u *store.User) error
	GetUser(ctx context.Context, id string) (*store.User, error)
	GetUserByEmail(ctx context.Context, email string) (*store.User, error)
	CreateRefreshToken(ctx context.Context, t *store.RefreshToken) error
	GetRefreshToken(ctx context.Context, tokenHash string) (*store.RefreshToken, error)
	RevokeRefreshToken(ctx context.Context, id string, at time.Time) error
	RevokeRefreshFamily(ctx context.Context, familyID string, at time.Time) error
}

// Service issues and checks credentials. It is safe for concurrent use.
type Service struct {
	st         Store
	secret     []byte
	bcryptCost int
	now        func() time.Time
	dummyHash  []byte // compared against when the email is unknown, so both failures cost the same
	verified   verifiedTokens
	accounts   accountStates
}

// New returns a Service signing with secret. cost is the bcrypt cost (0: bcrypt.DefaultCost).
func New(st Store, secret string, cost int) *Service {
	if cost == 0 {
		cost = bcrypt.DefaultCost
	}
	s := &Service{st: st, secret: []byte(secret), bcryptCost: cost, now: time.Now}
	// It fails only for a cost above bcrypt.MaxCost; then Login's dummy comparison fails at once, which
	// shortens an unknown email's answer but refuses it all the same.
	s.dummyHash, _ = bcrypt.GenerateFromPassword(s.prehash("dummy-password"), cost)
	return s
}

// WithClock makes s read the time from now (token lifetimes, the account cache) and returns s:
// for tests that step over AccountTTL without waiting for it.
func (s *Service) WithClock(now func() time.Time) *Service {
	s.now = now
	return s
}

// Session is what register, login and refresh answer.
type Session struct {
	Token        string      `json:"token"`
	RefreshToken string      `json:"refreshToken"`
	User         *store.User `json:"user,omitempty"`
}

var errBadCredentials = errcode.New(errcode.Authentication, "Invalid email or password")

// Register creates a free_user account and logs it in.
func (s *Service) Register(ctx context.Context, email, password, username string) (*Session, error) {
	email = strings.ToLower(strings.TrimSpace(email))
	username = strings.TrimSpace(username)
	var fields []errcode.FieldError
	if a, err := mail.ParseAddress(email); err != nil || a.Address != email || len(email) > 254 {
		fields = append(fields, errcode.FieldError{Field: "email", Problem: "must be a valid email address"})
	}
	if n := utf8.RuneCountInString(password); n < 8 || n > 128 {
		fields = append(fields, errcode.FieldError{Field: "password", Problem: "must be 8 to 128 characters"})
	}
	if n := utf8.RuneCountInString(username); n < 1 || n > 64 {
		fields = append(fields, errcode.FieldError{Field: "username", Problem: "is required, at most 64 characters"})
	}
	if len(fields) > 0 {
		return nil, errcode.New(errcode.Validation, fields[0].Field+": "+fields[0].Problem).WithDetails(fields)
	}
	hash, err := bcrypt.GenerateFromPassword(s.prehash(password), s.bcryptCost)
	if err != nil {
		return nil, fmt.Errorf("auth: hash password: %w", err)
	}
	u := &store.User{ID: uuid.NewString(), Email: email, Username: username, PasswordHash: string(hash), Role: store.RoleFreeUser}
	if err := s.st.CreateUser(ctx, u); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return nil, errcode.New(errcode.Validation, "email: already registered").
				WithDetails([]errcode.FieldError{{Field: "email", Problem: "already registered"}}).WithStatus(409)
		}
		return nil, fmt.Errorf("auth: create user: %w", err)
	}
	return s.newSession(ctx, u, uuid.NewString())
}

// Login checks an email and password. A wrong password and an unknown email fail alike.
func (s *Service) Login(ctx context.Context, email, password string) (*Session, error) {
	u, err := s.st.GetUserByEmail(ctx, email)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			// Only for its time: an unknown email costs what a wrong password does. The result is moot.
			_ = bcrypt.CompareHashAndPassword(s.dummyHash, s.prehash(password))
			return nil, errBadCredentials
		}
		return nil, fmt.Errorf("auth: find user: %w", err)
	}
	if bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), s.prehash(password)) != nil {
		return nil, errBadCredentials
	}
	return s.newSession(ctx, u, uuid.NewString())
}

// Refresh exchanges a refresh token for a new pair. The token is single-use: reusing one revokes
// its whole family (a stolen token is then useless to both holders).
func (s *Service) Refresh(ctx context.Context, refreshToken string) (*Session, error) {
	bad := errcode.New(errcode.Authentication, "Invalid or expired refresh token")
	if refreshToken == "" {
		return nil, bad
	}
	t, err := s.st.GetRefreshToken(ctx, hashToken(refreshToken))
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, bad
		}
		return nil, fmt.Errorf("auth: find refresh token: %w", err)
	}
	now := s.now()
	if t.RevokedAt != nil {
		if err := s.st.RevokeRefreshFamily(ctx, t.FamilyID, now); err != nil {
			return nil, fmt.Errorf("auth: revoke family: %w", err)
		}
		return nil, bad
	}
	if now.After(t.ExpiresAt) {
		return nil, bad
	}
	if err := s.st.RevokeRefreshToken(ctx, t.ID, now); err != nil {
		if errors.Is(err, store.ErrStale) { // used concurrently: treat as reuse
			if err := s.st.RevokeRefreshFamily(ctx, t.FamilyID, now); err != nil {
				return nil, fmt.Errorf("auth: revoke family: %w", err)
			}
			return nil, bad
		}
		return nil, fmt.Errorf("auth: revoke refresh token: %w", err)
	}
	u, err := s.st.GetUser(ctx, t.UserID)
	if err != nil {
		return nil, bad
	}
	sess, err := s.newSession(ctx, u, t.FamilyID)
	if err != nil {
		return nil, err
	}
	sess.User = nil
	return sess, nil
}

// Verify checks an access token and returns its principal.
func (s *Service) Verify(token string) (*Principal, error) {
	// Tokens already verified are remembered until they expire (verifiedTokens): make bench's API
	// target (authenticated GET /api/projects at 64 clients, at least 30% of bare Fiber with p99
	// at most 10 ms) needs it; without it each request cost a third more CPU in the same run. The
	// rule it imposes: an access token, once verified, is good until it expires in this process
	// (DECISIONS.md gives access tokens no early revocation); whatever comes to revoke one, or to
	// change the secret without a restart, must clear s.verified. The account behind a token (its
	// role, whether it still exists) is not part of this: VerifyAccount reads it apart.
	if p, ok := s.verified.get(token, s.now()); ok {
		return p, nil
	}
	claims := &accessClaims{}
	parsed, err := jwt.ParseWithClaims(token, claims, func(*jwt.Token) (any, error) { return s.secret, nil },
		jwt.WithValidMethods([]string{"HS256"}), jwt.WithExpirationRequired(), jwt.WithIssuedAt(),
		jwt.WithTimeFunc(s.now))
	if err != nil || !parsed.Valid || claims.Typ != "access" || claims.Subject == "" {
		return nil, errcode.New(errcode.Authentication, "Invalid or expired token")
	}
	p := &Principal{UserID: claims.Subject, Role: claims.Role, Username: claims.Username}
	s.verified.put(token, *p, claims.ExpiresAt.Time)
	return p, nil
}

// AccountTTL is how long an account's role and existence, read from the database, are trusted
// before they are read again: a demoted admin loses the admin routes, and a deleted account's
// access tokens stop working, at most this long after the change (issue 37).
const AccountTTL = 30 * time.Second

// VerifyAccount checks an access token (Verify) and the account behind it: the account must still
// exist, and the principal's role is the account's role now, not the token's claim (a token lives 7
// days; a role can change the next minute). The account is read at most every AccountTTL.
func (s *Service) VerifyAccount(ctx context.Context, token string) (*Principal, error) {
	p, err := s.Verify(token)
	if err != nil {
		return nil, err
	}
	role, err := s.accountRole(ctx, p.UserID)
	if err != nil {
		return nil, err
	}
	p.Role = role
	return p, nil
}

// accountRole is the current role of a live account (401 when it no longer exists).
func (s *Service) accountRole(ctx context.Context, userID string) (string, error) {
	now := s.now()
	if role, ok := s.accounts.get(userID, now); ok {
		return role, nil
	}
	u, err := s.st.GetUser(ctx, userID)
	if errors.Is(err, store.ErrNotFound) {
		return "", errcode.New(errcode.Authentication, "Account no longer exists")
	}
	if err != nil {
		return "", fmt.Errorf("auth: read account: %w", err)
	}
	s.accounts.put(userID, u.Role, now.Add(AccountTTL))
	return u.Role, nil
}

// accountStates remembers the role of accounts read lately, each until its expiry (AccountTTL).
type accountStates struct {
	mu sync.RWMutex
	m  map[string]accountState
}

type accountState struct {
	role string
	exp  time.Time
}

func (a *accountStates) get(userID string, now time.Time) (string, bool) {
	a.mu.RLock()
	e, ok := a.m[userID]
	a.mu.RUnlock()
	if !ok || !now.Before(e.exp) {
		return "", false
	}
	return e.role, true
}

func (a *accountStates) put(userID, role string, exp time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil || len(a.m) >= verifiedMax {
		a.m = make(map[string]accountState)
	}
	a.m[strings.Clone(userID)] = accountState{role: role, exp: exp}
}

// verifiedTokens remembers access tokens already verified, until they expire, so a client's
// repeated requests skip the HMAC and the claims' JSON (a tenth of a small authenticated GET).
// The key is the whole token, signature included: only the exact bytes that passed are let
// through. Access tokens have no early revocation (DECISIONS.md), so remembering one changes
// nothing a client can see; a changed role or a deleted account is VerifyAccount's (accountStates).
type verifiedTokens struct {
	mu sync.RWMutex
	m  map[string]verifiedToken
}

type verifiedToken struct {
	p   Principal
	exp time.Time
}

// verifiedMax bounds the tokens remembered; past it the memory starts over.
const verifiedMax = 4096

func (v *verifiedTokens) get(token string, now time.Time) (*Principal, bool) {
	v.mu.RLock()
	e, ok := v.m[token]
	v.mu.RUnlock()
	if !ok || !now.Before(e.exp) {
		return nil, false
	}
	p := e.p // each caller gets its own copy
	return &p, true
}

func (v *verifiedTokens) put(token string, p Principal, exp time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m == nil || len(v.m) >= verifiedMax {
		v.m = make(map[string]verifiedToken)
	}
	// Clone: the caller's string may share memory with a request buffer that is reused (Fiber's
	// zero-copy headers), which would change the key under the map.
	v.m[strings.Clone(token)] = verifiedToken{p: p, exp: exp}
}

// User returns the account of a principal.
func (s *Service) User(ctx context.Context, p *Principal) (*store.User, error) {
	u, err := s.st.GetUser(ctx, p.UserID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errcode.New(errcode.Authentication, "Account no longer exists")
	}
	return u, err
}

// IssueAccess signs an access token for u (also used by tests and operator commands).
func (s *Service) IssueAccess(u *store.User) (string, error) {
	now := s.now()
	c := accessClaims{
		Role: u.Role, Username: u.Username, Typ: "access",
		RegisteredClaims: jwt.RegisteredClaims{
			Subject: u.ID, ID: uuid.NewString(),
			IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(AccessTTL)),
		},
	}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(s.secret)
	if err != nil {
		return "", fmt.Errorf("auth: sign token: %w", err)
	}
	return tok, nil
}

func (s *Service) newSession(ctx context.Context, u *store.User, family string) (*Session, error) {
	access, err := s.IssueAccess(u)
	if err != nil {
		return nil, err
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("auth: random: %w", err)
	}
	refresh := base64.RawURLEncoding.EncodeToString(raw)
	rt := &store.RefreshToken{ID: uuid.NewString(), UserID: u.ID, FamilyID: family, TokenHash: hashToken(refresh),
		ExpiresAt: s.now().Add(RefreshTTL)}
	if err := s.st.CreateRefreshToken(ctx, rt); err != nil {
		return nil, fmt.Errorf("auth: store refresh token: %w", err)
	}
	return &Session{Token: access, RefreshToken: refresh, User: u}, nil
}

// prehash makes any password up to 128 characters fit bcrypt's 72-byte input without truncation:
// bcrypt sees the base64 of an HMAC-SHA256 of the whole password.
func (s *Service) prehash(password string) []byte {
	m := hmac.New(sha256.New, []byte("reelforge-password-v1"))
	m.Write([]byte(password))
	return []byte(base64.StdEncoding.EncodeToString(m.Sum(nil)))
}

func hashToken(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(sum[:])
}

type accessClaims struct {
	Role     string `json:"role"`
	Username string `json:"username"`
	Typ      string `json:"typ"`
	jwt.RegisteredClaims
}
