package store

import (
	"context"
	"time"
)

// IdempotentResponse is the first answer to a request with an Idempotency-Key.
type IdempotentResponse struct {
	UserID      string // the caller: a user id, or "key:<id>" for an API key (auth.Principal.ID)
	Key         string
	RequestHash string
	Status      int // 0 while the first request is still being processed
	Body        []byte
	ContentType string
	CreatedAt   time.Time
	// HeldBy names the host life serving the first request, and Lease how long its reservation
	// lasts without renewal (RenewIdempotencyLeases): a reservation whose holder died is released
	// by the next request with the key. Empty HeldBy: held until the record expires.
	HeldBy string
	Lease  time.Duration
}

// Idempotency remembers answers to requests with an Idempotency-Key.
type Idempotency interface {
	// ReserveIdempotencyKey records a new key (Status 0). When the key exists (and is younger than
	// since) it returns the stored record and ErrConflict.
	ReserveIdempotencyKey(ctx context.Context, r *IdempotentResponse, since time.Time) (*IdempotentResponse, error)
	CompleteIdempotencyKey(ctx context.Context, r *IdempotentResponse) error
	// ReleaseIdempotencyKey forgets a reservation whose request failed before answering.
	ReleaseIdempotencyKey(ctx context.Context, userID, key string) error
	// RenewIdempotencyLeases extends the reservations holder holds (requests still in flight).
	RenewIdempotencyLeases(ctx context.Context, holder string, lease time.Duration) (int64, error)
	// ReleaseIdempotencyKeysOf forgets the reservations held by any life of host (requests that
	// life never answered); a host calls it at start, before it serves anything.
	ReleaseIdempotencyKeysOf(ctx context.Context, host string) (int64, error)
	PurgeIdempotencyKeys(ctx context.Context, before time.Time) (int64, error)
}
