package store

import (
	"context"
	"time"
)

// Roles of a user.
const (
	RoleAdmin    = "admin"
	RoleUser     = "user" // paid
	RoleFreeUser = "free_user"
)

// User is an account.
type User struct {
	ID           string    `json:"id" format:"uuid"`
	Email        string    `json:"email" format:"email"`
	Username     string    `json:"username"`
	PasswordHash string    `json:"-"`
	Role         string    `json:"role" enum:"admin,user,free_user"`
	AvatarURL    string    `json:"avatar_url"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// RefreshToken is a stored (hashed) refresh token. Tokens of one login form a family.
type RefreshToken struct {
	ID        string
	UserID    string
	FamilyID  string
	TokenHash string
	ExpiresAt time.Time
	RevokedAt *time.Time
	CreatedAt time.Time
}

// Users stores accounts and refresh tokens.
type Users interface {
	// CreateUser inserts u; ErrConflict when the (lower-cased) email is taken.
	CreateUser(ctx context.Context, u *User) error
	GetUser(ctx context.Context, id string) (*User, error)
	GetUserByEmail(ctx context.Context, email string) (*User, error)
	SetUserRole(ctx context.Context, id, role string) error

	CreateRefreshToken(ctx context.Context, t *RefreshToken) error
	GetRefreshToken(ctx context.Context, tokenHash string) (*RefreshToken, error)
	// RevokeRefreshToken marks one token used; ErrStale when it was revoked already (a reuse).
	RevokeRefreshToken(ctx context.Context, id string, at time.Time) error
	RevokeRefreshFamily(ctx context.Context, familyID string, at time.Time) error
}
