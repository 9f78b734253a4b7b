package sqldb

import (
	"context"

	"github.com/reelforge/reelforge/host/store"
)

// InsertOutboxEvent implements store.Outbox.
func (db *DB) InsertOutboxEvent(ctx context.Context, e *store.OutboxEvent) error {
	now := db.Now()
	e.CreatedAt = now
	if e.NextAttemptAt.IsZero() {
		e.NextAttemptAt = now
	}
	if e.Status == "" {
		e.Status = "pending"
	}
	_, err := db.Exec(ctx, `INSERT INTO outbox (id, event, payload, user_id, project_id, status, attempts, next_attempt_at, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, 0, $7, $8)`,
		e.ID, e.Event, string(e.Payload), e.UserID, e.ProjectID, e.Status, db.T(e.NextAttemptAt), db.T(now))
	return err
}
