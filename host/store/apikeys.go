package store

import (
	"context"
	"time"
)

// Scopes of an API key.
const (
	ScopeAutomation = "automation" // the scheduler API, the orchestrator and the event test routes
	ScopeAdmin      = "admin"      // everything an admin may do, as the key's admin user
)

// APIKey is a stored service credential. KeyHash is the hex SHA-256 of the key; the key itself
// is never stored. Prefix is the key's first characters, shown in listings to tell keys apart.
type APIKey struct {
	ID         string     `json:"id" format:"uuid"`
	Name       string     `json:"name" doc:"triggered_by of the runs the key starts"`
	Scope      string     `json:"scope" enum:"automation,admin"`
	KeyHash    string     `json:"-"`
	Prefix     string     `json:"prefix" doc:"the key's first characters"`
	UserID     string     `json:"user_id,omitempty"` // the admin an admin-scope key acts as
	CreatedBy  string     `json:"created_by"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
}

// APIKeys stores service credentials.
type APIKeys interface {
	// CreateAPIKey inserts k; ErrConflict when a live key has the same name.
	CreateAPIKey(ctx context.Context, k *APIKey) error
	// GetAPIKeyByHash returns the key of that hash, revoked or not; ErrNotFound when none.
	GetAPIKeyByHash(ctx context.Context, keyHash string) (*APIKey, error)
	// ListAPIKeys lists every key, newest first, revoked ones included.
	ListAPIKeys(ctx context.Context) ([]APIKey, error)
	// RevokeAPIKey revokes the live key whose id or name is idOrName; ErrNotFound when none.
	RevokeAPIKey(ctx context.Context, idOrName string, at time.Time) (*APIKey, error)
	// TouchAPIKey records a use of the key.
	TouchAPIKey(ctx context.Context, id string, at time.Time) error
}
