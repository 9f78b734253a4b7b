package auth

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// KeyPrefix starts every API key, so a bearer credential is told apart from a JWT without
// parsing it (and a leaked key is recognisable in a scan).
const KeyPrefix = "rfk_"

// keyTouchEvery is how stale a key's last_used_at may get before a request writes it again: one
// write a minute per key, not one per request.
const keyTouchEvery = time.Minute

// KeyStore is what API keys need of the database.
type KeyStore interface {
	CreateAPIKey(ctx context.Context, k *store.APIKey) error
	GetAPIKeyByHash(ctx context.Context, keyHash string) (*store.APIKey, error)
	ListAPIKeys(ctx context.Context) ([]store.APIKey, error)
	RevokeAPIKey(ctx context.Context, idOrName string, at time.Time) (*store.APIKey, error)
	TouchAPIKey(ctx context.Context, id string, at time.Time) error
	GetUser(ctx context.Context, id string) (*store.User, error)
}

// IsKey reports whether a bearer credential is an API key (rather than an access token).
func IsKey(token string) bool { return strings.HasPrefix(token, KeyPrefix) }

// CreateKeyParams describe a new API key.
type CreateKeyParams struct {
	Name  string // 1 to 64 characters of letters, digits, '-', '_', '.'; unique among live keys
	Scope string // store.ScopeAutomation or store.ScopeAdmin
	// UserID is the admin an admin-scope key acts as (required for that scope, ignored otherwise).
	UserID    string
	CreatedBy string // who asked for it: a user id, or "cli"
}

// CreateKey issues a key. The key is returned once, here; only its hash is stored.
func CreateKey(ctx context.Context, st KeyStore, p CreateKeyParams) (key string, k *store.APIKey, err error) {
	p.Name = strings.TrimSpace(p.Name)
	if !validKeyName(p.Name) {
		return "", nil, errcode.Invalid("name", "must be 1 to 64 letters, digits, '-', '_' or '.'")
	}
	switch p.Scope {
	case store.ScopeAutomation:
		p.UserID = ""
	case store.ScopeAdmin:
		if p.UserID == "" {
			return "", nil, errcode.Invalid("user", "an admin key acts as an admin account: name one")
		}
		u, err := st.GetUser(ctx, p.UserID)
		if err != nil || u.Role != store.RoleAdmin {
			return "", nil, errcode.Invalid("user", "must be an admin account")
		}
	default:
		return "", nil, errcode.Invalid("scope", "must be automation or admin")
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", nil, fmt.Errorf("auth: random: %w", err)
	}
	key = KeyPrefix + base64.RawURLEncoding.EncodeToString(raw)
	k = &store.APIKey{ID: uuid.NewString(), Name: p.Name, Scope: p.Scope, KeyHash: hashToken(key),
		Prefix: key[:len(KeyPrefix)+6], UserID: p.UserID, CreatedBy: p.CreatedBy}
	if err := st.CreateAPIKey(ctx, k); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return "", nil, errcode.New(errcode.Validation, "name: a live key already has this name").
				WithDetails([]errcode.FieldError{{Field: "name", Problem: "a live key already has this name"}}).WithStatus(409)
		}
		return "", nil, fmt.Errorf("auth: store api key: %w", err)
	}
	return key, k, nil
}

func validKeyName(n string) bool {
	if n == "" || utf8.RuneCountInString(n) > 64 {
		return false
	}
	for _, r := range n {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// VerifyKey checks an API key against the database on every call (never a cache), so a revoked
// key fails on the next request. An automation key's principal has no user: it may call only
// the routes of its scope. An admin key acts as its admin account, which must still be an admin.
func (s *Service) VerifyKey(ctx context.Context, key string) (*Principal, error) {
	bad := errcode.New(errcode.Authentication, "Invalid or revoked API key")
	ks, ok := s.st.(KeyStore)
	if !ok || !IsKey(key) {
		return nil, bad
	}
	k, err := ks.GetAPIKeyByHash(ctx, hashToken(key))
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, bad
		}
		return nil, fmt.Errorf("auth: find api key: %w", err)
	}
	if k.RevokedAt != nil {
		return nil, bad
	}
	p := &Principal{Scope: k.Scope, KeyID: k.ID, KeyName: k.Name}
	if k.Scope == store.ScopeAdmin {
		u, err := ks.GetUser(ctx, k.UserID)
		if err != nil || u.Role != store.RoleAdmin {
			return nil, bad
		}
		p.UserID, p.Role, p.Username = u.ID, u.Role, u.Username
	}
	now := s.now()
	if k.LastUsedAt == nil || now.Sub(*k.LastUsedAt) >= keyTouchEvery {
		if err := ks.TouchAPIKey(ctx, k.ID, now); err != nil {
			return nil, fmt.Errorf("auth: record api key use: %w", err)
		}
	}
	return p, nil
}
