package sqldb

import (
	"context"
	"fmt"
	"time"

	"github.com/reelforge/reelforge/host/store"
)

// SetSubscriptionExpiry implements store.EventSources.
func (db *DB) SetSubscriptionExpiry(ctx context.Context, userID string, at *time.Time) error {
	n, err := db.Exec(ctx, `UPDATE users SET subscription_expires_at = $2, updated_at = $3 WHERE id = $1`,
		userID, db.TP(at), db.T(db.Now()))
	if err == nil && n == 0 {
		return store.ErrNotFound
	}
	return err
}

// ListSubscriptionsDue implements store.EventSources.
func (db *DB) ListSubscriptionsDue(ctx context.Context, p *store.ListSubscriptionsParams) ([]*store.SubscriptionDue, error) {
	rows, err := db.Query(ctx, `SELECT id, subscription_expires_at FROM users
		WHERE is_deleted = FALSE AND subscription_expires_at > $1 AND subscription_expires_at <= $2 AND id > $3
		ORDER BY id LIMIT $4`, db.T(p.From), db.T(p.To), p.AfterID, max(p.Limit, 1))
	if err != nil {
		return nil, fmt.Errorf("store: subscriptions due: %w", err)
	}
	defer rows.Close()
	var out []*store.SubscriptionDue
	for rows.Next() {
		var s store.SubscriptionDue
		if err := rows.Scan(&s.UserID, Time(&s.ExpiresAt)); err != nil {
			return nil, err
		}
		out = append(out, &s)
	}
	return out, rows.Err()
}

// ListUserActivity implements store.EventSources.
func (db *DB) ListUserActivity(ctx context.Context, p *store.ListActivityParams) ([]*store.UserActivity, error) {
	rows, err := db.Query(ctx, `SELECT u.id,
		(SELECT COUNT(*) FROM projects x WHERE x.user_id = u.id AND x.created_at >= $1 AND x.created_at < $2),
		(SELECT COUNT(*) FROM tasks x WHERE x.user_id = u.id AND x.created_at >= $1 AND x.created_at < $2),
		(SELECT COUNT(*) FROM tasks x WHERE x.user_id = u.id AND x.status = 'success' AND x.completed_at >= $1 AND x.completed_at < $2),
		(SELECT COUNT(*) FROM runs x WHERE x.user_id = u.id AND x.created_at >= $1 AND x.created_at < $2),
		(SELECT COUNT(*) FROM assets x WHERE x.user_id = u.id AND x.created_at >= $1 AND x.created_at < $2)
		FROM users u WHERE u.is_deleted = FALSE AND u.id > $3 ORDER BY u.id LIMIT $4`,
		db.T(p.Since), db.T(p.Until), p.AfterID, max(p.Limit, 1))
	if err != nil {
		return nil, fmt.Errorf("store: user activity: %w", err)
	}
	defer rows.Close()
	var out []*store.UserActivity
	for rows.Next() {
		var a store.UserActivity
		if err := rows.Scan(&a.UserID, &a.ProjectsCreated, &a.TasksCreated, &a.TasksCompleted, &a.RunsStarted, &a.AssetsUploaded); err != nil {
			return nil, err
		}
		out = append(out, &a)
	}
	return out, rows.Err()
}
