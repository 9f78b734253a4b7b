package store

import (
	"context"
	"time"
)

// IdempotentResponse is the first answer to a request with an Idempotency-Key.
type IdempotentResponse struct {
	UserID      string
	Key         string
	RequestHash string
	Status      int // 0 while the first request is still being processed
	Body        []byte
	ContentType string
	CreatedAt   time.Time
}

// Idempotency remembers answers to requests with an Idempotency-Key.
type Idempotency interface {
	// ReserveIdempotencyKey records a new key (Status 0). When the key exists (and is younger than
	// since) it returns the stored record and ErrConflict.
	ReserveIdempotencyKey(ctx context.Context, r *IdempotentResponse, since time.Time) (*IdempotentResponse, error)
	CompleteIdempotencyKey(ctx context.Context, r *IdempotentResponse) error
	// ReleaseIdempotencyKey forgets a reservation whose request failed before answering.
	ReleaseIdempotencyKey(ctx context.Context, userID, key string) error
	PurgeIdempotencyKeys(ctx context.Context, before time.Time) (int64, error)
}
