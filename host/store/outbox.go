package store

import (
	"context"
	"encoding/json"
	"time"
)

// OutboxEvent is an outbound system event waiting for delivery (DECISIONS.md: durable outbox).
type OutboxEvent struct {
	ID            string          `json:"id"`
	Event         string          `json:"event"`
	Payload       json.RawMessage `json:"payload"` // the exact body that will be signed and posted
	UserID        string          `json:"user_id"`
	ProjectID     string          `json:"project_id"`
	Status        string          `json:"status"` // pending, delivered, dead
	Attempts      int             `json:"attempts"`
	NextAttemptAt time.Time       `json:"next_attempt_at"`
	LastError     string          `json:"last_error"`
	CreatedAt     time.Time       `json:"created_at"`
	DeliveredAt   *time.Time      `json:"delivered_at"`
}

// Outbox stores outbound events. Call InsertOutboxEvent inside the transaction of the change that
// caused the event, so the two commit together.
type Outbox interface {
	InsertOutboxEvent(ctx context.Context, e *OutboxEvent) error
}
