package sqldb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/reelforge/reelforge/host/store"
)

// reserveAttempts bounds how often ReserveIdempotencyKey tries again when the key it found held was
// released before it could read the holder's record: each retry needs another request with the
// same key to reserve and release it in the meantime.
const reserveAttempts = 8

// ReserveIdempotencyKey implements store.Idempotency. An expired record is replaced.
func (db *DB) ReserveIdempotencyKey(ctx context.Context, r *store.IdempotentResponse, since time.Time) (*store.IdempotentResponse, error) {
	var got *store.IdempotentResponse
	err := db.WithTx(ctx, func(tx *DB) error {
		r.CreatedAt = tx.Now()
		// An expired record goes, and so does a reservation whose holder stopped renewing it: the
		// request it stood for died with its host and will never be answered.
		if _, err := tx.Exec(ctx, `DELETE FROM idempotency_keys WHERE user_id = $1 AND key = $2
			AND (created_at < $3 OR (status_code = 0 AND lease_until < $4))`,
			r.UserID, r.Key, tx.T(since), tx.T(r.CreatedAt)); err != nil {
			return err
		}
		var until any
		if r.HeldBy != "" {
			until = tx.T(r.CreatedAt.Add(r.Lease))
		}
		for range reserveAttempts {
			n, err := tx.Exec(ctx, `INSERT INTO idempotency_keys (user_id, key, request_hash, status_code, created_at, held_by, lease_until)
				VALUES ($1, $2, $3, 0, $4, $5, $6) ON CONFLICT (user_id, key) DO NOTHING`, r.UserID, r.Key, r.RequestHash, tx.T(r.CreatedAt),
				r.HeldBy, until)
			if err != nil || n == 1 {
				return err
			}
			old := store.IdempotentResponse{UserID: r.UserID, Key: r.Key}
			err = tx.QueryRow(ctx, `SELECT request_hash, status_code, content_type, body, created_at
				FROM idempotency_keys WHERE user_id = $1 AND key = $2`, r.UserID, r.Key).
				Scan(&old.RequestHash, &old.Status, &old.ContentType, &old.Body, Time(&old.CreatedAt))
			if err == nil {
				got = &old
				return nil
			}
			// Gone between our insert and this read: the request holding it failed and released
			// it. On PostgreSQL (READ COMMITTED) the next insert sees the release, so this request
			// takes the key as if it had come a moment later. SQLite's single writer never gets here.
			if !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		return fmt.Errorf("store: idempotency key reserved and released %d times while reserving it", reserveAttempts)
	})
	if err != nil {
		return nil, err
	}
	if got != nil {
		return got, store.ErrConflict
	}
	return nil, nil
}

// CompleteIdempotencyKey implements store.Idempotency.
func (db *DB) CompleteIdempotencyKey(ctx context.Context, r *store.IdempotentResponse) error {
	_, err := db.Exec(ctx, `UPDATE idempotency_keys SET status_code = $3, content_type = $4, body = $5
		WHERE user_id = $1 AND key = $2`, r.UserID, r.Key, r.Status, r.ContentType, r.Body)
	return err
}

// ReleaseIdempotencyKey implements store.Idempotency.
func (db *DB) ReleaseIdempotencyKey(ctx context.Context, userID, key string) error {
	_, err := db.Exec(ctx, `DELETE FROM idempotency_keys WHERE user_id = $1 AND key = $2 AND status_code = 0`, userID, key)
	return err
}

// RenewIdempotencyLeases implements store.Idempotency.
func (db *DB) RenewIdempotencyLeases(ctx context.Context, holder string, lease time.Duration) (int64, error) {
	if holder == "" {
		return 0, nil
	}
	return db.Exec(ctx, `UPDATE idempotency_keys SET lease_until = $2 WHERE held_by = $1 AND status_code = 0`,
		holder, db.T(db.Now().Add(lease)))
}

// ReleaseIdempotencyKeysOf implements store.Idempotency.
func (db *DB) ReleaseIdempotencyKeysOf(ctx context.Context, host string) (int64, error) {
	prefix := host + "/"
	return db.Exec(ctx, `DELETE FROM idempotency_keys WHERE status_code = 0 AND held_by <> '' AND substr(held_by, 1, $2) = $1`,
		prefix, len(prefix))
}

// PurgeIdempotencyKeys implements store.Idempotency.
func (db *DB) PurgeIdempotencyKeys(ctx context.Context, before time.Time) (int64, error) {
	return db.Exec(ctx, `DELETE FROM idempotency_keys WHERE created_at < $1`, db.T(before))
}
