package sqldb

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/reelforge/reelforge/host/store"
)

const outboxCols = `id, event, payload, user_id, project_id, status, attempts, next_attempt_at, last_error, created_at, delivered_at, claim_token`

func scanOutbox(r Row) (*store.OutboxEvent, error) {
	var e store.OutboxEvent
	if err := r.Scan(&e.ID, &e.Event, JSON(&e.Payload), &e.UserID, &e.ProjectID, &e.Status, &e.Attempts,
		Time(&e.NextAttemptAt), &e.LastError, Time(&e.CreatedAt), NullTime(&e.DeliveredAt), &e.ClaimToken); err != nil {
		return nil, err
	}
	return &e, nil
}

// InsertOutboxEvent implements store.Outbox.
func (db *DB) InsertOutboxEvent(ctx context.Context, e *store.OutboxEvent) error {
	now := db.Now()
	e.CreatedAt = now
	if e.NextAttemptAt.IsZero() {
		e.NextAttemptAt = now
	}
	if e.Status == "" {
		e.Status = store.OutboxPending
	}
	_, err := db.Exec(ctx, `INSERT INTO outbox (id, event, payload, user_id, project_id, status, attempts, next_attempt_at, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, 0, $7, $8)`,
		e.ID, e.Event, string(e.Payload), e.UserID, e.ProjectID, e.Status, db.T(e.NextAttemptAt), db.T(now))
	return err
}

// ClaimOutboxEvents implements store.Outbox. It is one statement: SQLite runs it under its single
// writer lock; PostgreSQL skips rows another claimer has locked (FOR UPDATE SKIP LOCKED), and the
// outer conditions are re-checked on rows that changed meanwhile. The lease is stored as the
// event's next attempt and read by the same clock (leaseClock).
func (db *DB) ClaimOutboxEvents(ctx context.Context, p *store.ClaimOutboxParams) ([]*store.OutboxEvent, error) {
	if p.Limit < 1 {
		return nil, nil
	}
	a := Args{List: []any{p.Token, p.Limit}}
	now, until := db.leaseClock(&a, p.Lease) // by the database's clock on PostgreSQL
	lock := db.rowLock(lockSkipLocked)
	// The CTE is materialized so the LIMIT is applied once (an IN (subquery) may be re-run).
	rows, err := db.Query(ctx, `WITH due AS MATERIALIZED (
			SELECT id AS due_id FROM outbox WHERE status = 'pending' AND next_attempt_at <= `+now+`
			ORDER BY next_attempt_at, created_at LIMIT $2`+lock+`)
		UPDATE outbox SET next_attempt_at = `+until+`, claim_token = $1, last_attempt_at = `+now+`
		FROM due WHERE outbox.id = due.due_id AND outbox.status = 'pending' AND outbox.next_attempt_at <= `+now+`
		RETURNING `+outboxCols, a.List...)
	if err != nil {
		return nil, fmt.Errorf("store: claim outbox: %w", err)
	}
	defer rows.Close()
	var out []*store.OutboxEvent
	for rows.Next() {
		e, err := scanOutbox(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out, nil
}

// FinishOutboxEvent implements store.Outbox.
func (db *DB) FinishOutboxEvent(ctx context.Context, p *store.FinishOutboxParams) error {
	now := db.Now()
	var n int64
	var err error
	switch p.Status {
	case store.OutboxDelivered, store.OutboxSkipped:
		n, err = db.Exec(ctx, `UPDATE outbox SET status = $3, delivered_at = $4, claim_token = '',
			attempts = attempts + CASE WHEN $3 = 'delivered' THEN 1 ELSE 0 END
			WHERE id = $1 AND claim_token = $2 AND status = 'pending'`, p.ID, p.Token, p.Status, db.T(now))
	case store.OutboxPending, store.OutboxDead:
		if p.HandBack && p.Status == store.OutboxPending {
			n, err = db.Exec(ctx, `UPDATE outbox SET next_attempt_at = $3, claim_token = ''
				WHERE id = $1 AND claim_token = $2 AND status = 'pending'`, p.ID, p.Token, db.T(now))
			break
		}
		retry := p.RetryAt
		if retry.IsZero() {
			retry = now
		}
		n, err = db.Exec(ctx, `UPDATE outbox SET status = $3, next_attempt_at = $4, last_error = $5, claim_token = '',
			attempts = attempts + 1
			WHERE id = $1 AND claim_token = $2 AND status = 'pending'`, p.ID, p.Token, p.Status, db.T(retry), p.Error)
	default:
		return fmt.Errorf("store: outbox status %q", p.Status)
	}
	if err != nil {
		return err
	}
	if n == 0 {
		return store.ErrStale
	}
	return nil
}

// GetOutboxEvent implements store.Outbox.
func (db *DB) GetOutboxEvent(ctx context.Context, id string) (*store.OutboxEvent, error) {
	return scanOutbox(db.QueryRow(ctx, `SELECT `+outboxCols+` FROM outbox WHERE id = $1`, id))
}

// CountOutbox implements store.Outbox.
func (db *DB) CountOutbox(ctx context.Context) (*store.OutboxCounts, error) {
	var c store.OutboxCounts
	err := db.QueryRow(ctx, `SELECT
		COALESCE(SUM(CASE WHEN status = 'pending' AND attempts = 0 THEN 1 ELSE 0 END), 0),
		COALESCE(SUM(CASE WHEN status = 'pending' AND attempts > 0 THEN 1 ELSE 0 END), 0),
		COALESCE(SUM(CASE WHEN status = 'delivered' THEN 1 ELSE 0 END), 0),
		COALESCE(SUM(CASE WHEN status = 'skipped' THEN 1 ELSE 0 END), 0),
		COALESCE(SUM(CASE WHEN status = 'dead' THEN 1 ELSE 0 END), 0)
		FROM outbox`).Scan(&c.Pending, &c.Failed, &c.Delivered, &c.Skipped, &c.Dead)
	if err != nil {
		return nil, fmt.Errorf("store: count outbox: %w", err)
	}
	err = db.QueryRow(ctx, `SELECT last_error, last_attempt_at FROM outbox WHERE last_error <> ''
		ORDER BY last_attempt_at DESC LIMIT 1`).Scan(&c.LastError, NullTime(&c.LastErrorAt))
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("store: last outbox error: %w", err)
	}
	return &c, nil
}

// PruneOutbox implements store.Outbox.
func (db *DB) PruneOutbox(ctx context.Context, before time.Time) (int64, error) {
	n, err := db.Exec(ctx, `DELETE FROM outbox WHERE status IN ('delivered', 'skipped') AND delivered_at < $1`, db.T(before))
	if err != nil {
		return 0, fmt.Errorf("store: prune outbox: %w", err)
	}
	return n, nil
}
