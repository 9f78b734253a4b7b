package sqldb

import (
	"context"
	"strings"
	"time"

	"github.com/reelforge/reelforge/host/store"
)

const userCols = `id, email, username, password_hash, role, avatar_url, created_at, updated_at`

func scanUser(r Row) (*store.User, error) {
	var u store.User
	if err := r.Scan(&u.ID, &u.Email, &u.Username, &u.PasswordHash, &u.Role, &u.AvatarURL,
		Time(&u.CreatedAt), Time(&u.UpdatedAt)); err != nil {
		return nil, err
	}
	return &u, nil
}

// CreateUser implements store.Users.
func (db *DB) CreateUser(ctx context.Context, u *store.User) error {
	now := db.Now()
	u.Email = strings.ToLower(strings.TrimSpace(u.Email))
	u.CreatedAt, u.UpdatedAt = now, now
	_, err := db.Exec(ctx, `INSERT INTO users (`+userCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		u.ID, u.Email, u.Username, u.PasswordHash, u.Role, u.AvatarURL, db.T(now), db.T(now))
	return err
}

// GetUser implements store.Users.
func (db *DB) GetUser(ctx context.Context, id string) (*store.User, error) {
	return scanUser(db.QueryRow(ctx, `SELECT `+userCols+` FROM users WHERE id = $1 AND is_deleted = FALSE`, id))
}

// GetUserByEmail implements store.Users; emails compare case-insensitively.
func (db *DB) GetUserByEmail(ctx context.Context, email string) (*store.User, error) {
	return scanUser(db.QueryRow(ctx, `SELECT `+userCols+` FROM users WHERE email = $1 AND is_deleted = FALSE`,
		strings.ToLower(strings.TrimSpace(email))))
}

// SetUserRole implements store.Users.
func (db *DB) SetUserRole(ctx context.Context, id, role string) error {
	n, err := db.Exec(ctx, `UPDATE users SET role = $2, updated_at = $3 WHERE id = $1`, id, role, db.T(db.Now()))
	if err == nil && n == 0 {
		return store.ErrNotFound
	}
	return err
}

// CreateRefreshToken implements store.Users.
func (db *DB) CreateRefreshToken(ctx context.Context, t *store.RefreshToken) error {
	t.CreatedAt = db.Now()
	_, err := db.Exec(ctx, `INSERT INTO refresh_tokens (id, user_id, family_id, token_hash, expires_at, created_at)
		VALUES ($1, $2, $3, $4, $5, $6)`, t.ID, t.UserID, t.FamilyID, t.TokenHash, db.T(t.ExpiresAt), db.T(t.CreatedAt))
	return err
}

// GetRefreshToken implements store.Users.
func (db *DB) GetRefreshToken(ctx context.Context, tokenHash string) (*store.RefreshToken, error) {
	var t store.RefreshToken
	err := db.QueryRow(ctx, `SELECT id, user_id, family_id, token_hash, expires_at, revoked_at, created_at
		FROM refresh_tokens WHERE token_hash = $1`, tokenHash).
		Scan(&t.ID, &t.UserID, &t.FamilyID, &t.TokenHash, Time(&t.ExpiresAt), NullTime(&t.RevokedAt), Time(&t.CreatedAt))
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// RevokeRefreshToken implements store.Users: one guarded update, so two concurrent refreshes with
// the same token cannot both succeed.
func (db *DB) RevokeRefreshToken(ctx context.Context, id string, at time.Time) error {
	n, err := db.Exec(ctx, `UPDATE refresh_tokens SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL`, id, db.T(at))
	if err == nil && n == 0 {
		return store.ErrStale
	}
	return err
}

// RevokeRefreshFamily implements store.Users.
func (db *DB) RevokeRefreshFamily(ctx context.Context, familyID string, at time.Time) error {
	_, err := db.Exec(ctx, `UPDATE refresh_tokens SET revoked_at = $2 WHERE family_id = $1 AND revoked_at IS NULL`, familyID, db.T(at))
	return err
}
