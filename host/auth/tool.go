package auth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"

	"github.com/reelforge/reelforge/sdk/errcode"
)

// ToolPrefix starts every tool credential: the short-lived bearer credential a run (or one
// /api/ai/chat answer) hands its external tool (Flowise, the graph runner, the automation tool) so
// that the tool can read its owner's knowledge. The prefix tells it apart from an access token and
// an API key without parsing it.
const ToolPrefix = "rft_"

// ScopeTool is the Scope of a tool credential's Principal.
const ScopeTool = "tool"

// ToolGrant is what a tool credential lets its holder do: read the knowledge of UserID in
// ProjectID (none: the owner's knowledge outside projects only), until Expires, and, when RunID is
// set, only while that run has not ended (the API checks the run on every request: runs.Service
// .CheckGrant).
type ToolGrant struct {
	UserID    string
	ProjectID string
	RunID     string
	Expires   time.Time
}

type toolClaims struct {
	Project string `json:"prj,omitempty"`
	Run     string `json:"run,omitempty"`
	Typ     string `json:"typ"`
	jwt.RegisteredClaims
}

// toolKey is the key tool credentials are signed with: derived from the access tokens' secret, so
// that one can never be taken for the other (their typ differs too).
func (s *Service) toolKey() []byte {
	m := hmac.New(sha256.New, s.secret)
	m.Write([]byte("reelforge tool credential v1"))
	return m.Sum(nil)
}

// IsTool reports whether a bearer credential is a tool credential.
func IsTool(token string) bool { return strings.HasPrefix(token, ToolPrefix) }

// Redact is a credential as it may appear in a log or a trace: its prefix and first characters.
func Redact(token string) string {
	if len(token) <= len(ToolPrefix)+6 {
		return ToolPrefix + "…"
	}
	return token[:len(ToolPrefix)+6] + "…"
}

// IssueTool signs a tool credential for g. It carries no role: whoever holds it acts as the
// grant's user without any admin power, on the knowledge routes only (the API's authenticate).
func (s *Service) IssueTool(g ToolGrant) (string, error) {
	if g.UserID == "" {
		return "", errcode.New(errcode.Unknown, "auth: a tool credential needs its user")
	}
	now := s.now()
	c := toolClaims{Project: g.ProjectID, Run: g.RunID, Typ: "tool", RegisteredClaims: jwt.RegisteredClaims{
		Subject: g.UserID, ID: uuid.NewString(), IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(g.Expires)}}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(s.toolKey())
	if err != nil {
		return "", errcode.E("auth.IssueTool", errcode.Unknown, "could not sign a tool credential", err)
	}
	return ToolPrefix + tok, nil
}

// VerifyTool checks a tool credential (signature, expiry, the account still exists) and returns
// its principal: Scope ScopeTool, the grant's user without a role, and the grant's project and run.
// Whether the run is still going is the caller's to check (runs.Service.CheckGrant).
func (s *Service) VerifyTool(ctx context.Context, token string) (*Principal, error) {
	bad := errcode.New(errcode.Authentication, "Invalid or expired tool credential")
	raw, ok := strings.CutPrefix(token, ToolPrefix)
	if !ok {
		return nil, bad
	}
	claims := &toolClaims{}
	parsed, err := jwt.ParseWithClaims(raw, claims, func(*jwt.Token) (any, error) { return s.toolKey(), nil },
		jwt.WithValidMethods([]string{"HS256"}), jwt.WithExpirationRequired(), jwt.WithIssuedAt(), jwt.WithTimeFunc(s.now))
	if err != nil || !parsed.Valid || claims.Typ != "tool" || claims.Subject == "" {
		return nil, bad
	}
	if _, err := s.accountRole(ctx, claims.Subject); err != nil {
		return nil, err
	}
	return &Principal{UserID: claims.Subject, Scope: ScopeTool, ToolProject: claims.Project, ToolRun: claims.Run}, nil
}
