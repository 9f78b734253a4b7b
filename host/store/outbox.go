package store

import (
	"context"
	"encoding/json"
	"time"
)

// Outbox statuses.
const (
	OutboxPending   = "pending"   // waiting for delivery (attempts > 0: failed at least once, retrying)
	OutboxDelivered = "delivered" // the receiver answered 2xx
	OutboxSkipped   = "skipped"   // filtered out by the enabled events: never sent
	OutboxDead      = "dead"      // retries ran out (24 h); kept for inspection
)

// OutboxEvent is an outbound system event waiting for delivery (DECISIONS.md: durable outbox).
type OutboxEvent struct {
	ID            string          `json:"id"`
	Event         string          `json:"event"`
	Payload       json.RawMessage `json:"payload"` // the exact body that will be signed and posted
	UserID        string          `json:"user_id"`
	ProjectID     string          `json:"project_id"`
	Status        string          `json:"status"` // pending, delivered, skipped, dead
	Attempts      int             `json:"attempts"`
	NextAttemptAt time.Time       `json:"next_attempt_at"`
	LastError     string          `json:"last_error"`
	CreatedAt     time.Time       `json:"created_at"`
	DeliveredAt   *time.Time      `json:"delivered_at"`
	// ClaimToken identifies the lease under which a worker holds the event (set by ClaimOutboxEvents).
	ClaimToken string `json:"-"`
}

// ClaimOutboxParams asks for due pending events.
type ClaimOutboxParams struct {
	Limit int
	Token string // a fresh token identifying this claim
	// Lease is how long claimed events are not due again (a crashed worker's lease runs out),
	// from the claim's write by the database's clock on PostgreSQL: hosts' clocks may disagree,
	// and a claim that waited out a stall does not land expired.
	Lease time.Duration
}

// FinishOutboxParams records the outcome of one delivery attempt under a claim.
type FinishOutboxParams struct {
	ID    string
	Token string // the claim's token: a worker whose lease ran out and was re-claimed gets ErrStale
	// Status is the new status: OutboxDelivered, OutboxSkipped, OutboxDead, or OutboxPending to retry
	// at RetryAt.
	Status  string
	RetryAt time.Time
	Error   string // the failure, for a retry or a dead event
	// HandBack, with OutboxPending, returns an event not attempted (the worker is stopping) for
	// delivery at RetryAt: no attempt is counted and the last error is kept.
	HandBack bool
}

// OutboxCounts are the numbers of events by state, for notification-status.
type OutboxCounts struct {
	Pending     int        // pending, never attempted
	Failed      int        // pending after at least one failed attempt
	Delivered   int        //
	Skipped     int        //
	Dead        int        //
	LastError   string     // the most recent delivery error
	LastErrorAt *time.Time //
}

// Outbox stores outbound events. Call InsertOutboxEvent inside the transaction of the change that
// caused the event, so the two commit together.
type Outbox interface {
	// InsertOutboxEvent stores a pending event; ErrConflict when its id is taken (callers that
	// use deterministic ids rely on it to emit once).
	InsertOutboxEvent(ctx context.Context, e *OutboxEvent) error
	// ClaimOutboxEvents leases up to Limit due pending events, oldest first. Concurrent claimers
	// (several hosts) never get the same event while its lease lasts. On PostgreSQL an event is
	// due, and its lease runs out, by the database's clock.
	ClaimOutboxEvents(ctx context.Context, p *ClaimOutboxParams) ([]*OutboxEvent, error)
	// FinishOutboxEvent records an attempt's outcome; ErrStale when the claim is no longer held.
	FinishOutboxEvent(ctx context.Context, p *FinishOutboxParams) error
	GetOutboxEvent(ctx context.Context, id string) (*OutboxEvent, error)
	CountOutbox(ctx context.Context) (*OutboxCounts, error)
	// PruneOutbox deletes delivered and skipped events finished before before (dead ones stay)
	// and returns how many it deleted.
	PruneOutbox(ctx context.Context, before time.Time) (int64, error)

	EventSources
}

// SubscriptionDue is a user whose subscription ends at ExpiresAt.
type SubscriptionDue struct {
	UserID    string
	ExpiresAt time.Time
}

// ListSubscriptionsParams pages through users whose subscription ends in (From, To].
type ListSubscriptionsParams struct {
	From, To time.Time
	AfterID  string // keyset paging by user id
	Limit    int
}

// UserActivity is what one user did in a period (the daily summary).
type UserActivity struct {
	UserID          string `json:"userId"`
	ProjectsCreated int    `json:"projectsCreated"`
	TasksCreated    int    `json:"tasksCreated"`
	TasksCompleted  int    `json:"tasksCompleted"`
	RunsStarted     int    `json:"runsStarted"`
	AssetsUploaded  int    `json:"assetsUploaded"`
}

// ListActivityParams pages through users (not deleted) with their activity in [Since, Until).
type ListActivityParams struct {
	Since, Until time.Time
	AfterID      string
	Limit        int
}

// EventSources are the reads behind the scheduled events (subscription.expiring,
// user.daily.summary).
type EventSources interface {
	// SetSubscriptionExpiry sets (nil: clears) when the user's subscription ends.
	SetSubscriptionExpiry(ctx context.Context, userID string, at *time.Time) error
	ListSubscriptionsDue(ctx context.Context, p *ListSubscriptionsParams) ([]*SubscriptionDue, error)
	ListUserActivity(ctx context.Context, p *ListActivityParams) ([]*UserActivity, error)
}

// PubSub broadcasts small messages (up to about 8000 bytes) to every host on the database:
// PostgreSQL LISTEN/NOTIFY. SQLite has one host: its methods return ErrNotSupported.
type PubSub interface {
	Publish(ctx context.Context, channel, payload string) error
	// Listen calls fn with each payload published on channel until ctx ends, on a connection of
	// its own; it returns ctx's error or the connection's.
	Listen(ctx context.Context, channel string, fn func(payload string)) error
}
