package sqldb

import (
	"context"
	"time"

	"github.com/reelforge/reelforge/host/store"
)

const apiKeyCols = `id, name, scope, key_hash, prefix, user_id, created_by, created_at, last_used_at, revoked_at`

func scanAPIKey(r Row) (*store.APIKey, error) {
	var k store.APIKey
	if err := r.Scan(&k.ID, &k.Name, &k.Scope, &k.KeyHash, &k.Prefix, &k.UserID, &k.CreatedBy,
		Time(&k.CreatedAt), NullTime(&k.LastUsedAt), NullTime(&k.RevokedAt)); err != nil {
		return nil, err
	}
	return &k, nil
}

// CreateAPIKey implements store.APIKeys.
func (db *DB) CreateAPIKey(ctx context.Context, k *store.APIKey) error {
	k.CreatedAt = db.Now()
	_, err := db.Exec(ctx, `INSERT INTO api_keys (`+apiKeyCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULL, NULL)`,
		k.ID, k.Name, k.Scope, k.KeyHash, k.Prefix, k.UserID, k.CreatedBy, db.T(k.CreatedAt))
	return err
}

// GetAPIKeyByHash implements store.APIKeys.
func (db *DB) GetAPIKeyByHash(ctx context.Context, keyHash string) (*store.APIKey, error) {
	return scanAPIKey(db.QueryRow(ctx, `SELECT `+apiKeyCols+` FROM api_keys WHERE key_hash = $1`, keyHash))
}

// ListAPIKeys implements store.APIKeys.
func (db *DB) ListAPIKeys(ctx context.Context) ([]store.APIKey, error) {
	return queryAll(ctx, db, scanAPIKey, `SELECT `+apiKeyCols+` FROM api_keys ORDER BY created_at DESC, id`)
}

// RevokeAPIKey implements store.APIKeys: one guarded update of the live key named by id or name.
func (db *DB) RevokeAPIKey(ctx context.Context, idOrName string, at time.Time) (*store.APIKey, error) {
	k, err := scanAPIKey(db.QueryRow(ctx, `UPDATE api_keys SET revoked_at = $2
		WHERE (id = $1 OR name = $1) AND revoked_at IS NULL RETURNING `+apiKeyCols, idOrName, db.T(at)))
	if err != nil {
		return nil, err
	}
	return k, nil
}

// TouchAPIKey implements store.APIKeys.
func (db *DB) TouchAPIKey(ctx context.Context, id string, at time.Time) error {
	_, err := db.Exec(ctx, `UPDATE api_keys SET last_used_at = $2 WHERE id = $1`, id, db.T(at))
	return err
}
