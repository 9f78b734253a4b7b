// Package events carries what happened in the host to the outside: outbound system events
// (signed webhooks, delivered from a durable outbox) and WebSocket frames to the subscribers of a
// project.
//
// Producers call Emit inside the transaction of the change that caused the event, and a Notifier
// for live client frames.
package events

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/store"
)

// Names of the outbound events of SPEC.md.
const (
	JobStatusChanged     = "job.status.changed"
	JobCompleted         = "job.completed"
	JobFailed            = "job.failed"
	ContentCreated       = "content.created"
	ContentPublished     = "content.published"
	ContentDraftReady    = "content.draft.ready"
	TaskCompleted        = "task.completed"
	TaskAssetUploaded    = "task.asset.uploaded"
	SubscriptionExpiring = "subscription.expiring"
	UserDailySummary     = "user.daily.summary"
	// SchedulerTaskSkipped is the host's own: a due strategy task the scheduler did not start
	// (data: project_id, strategy_task_id, workflow_id, reason, code, retry_after_seconds).
	SchedulerTaskSkipped = "scheduler.task.skipped"
)

// Version is meta.version of every event payload.
const Version = "1.0"

// Source is meta.source of every event payload.
const Source = "reelforge"

// Event is an outbound system event before it is stored.
type Event struct {
	// ID is the payload id; empty: a random UUID. A deterministic id makes an emit happen once:
	// a second Emit with the same id fails with store.ErrConflict.
	ID        string
	Name      string
	Data      map[string]any
	UserID    string
	ProjectID string
}

// Payload is the JSON body posted to the webhook receiver.
type Payload struct {
	ID        string         `json:"id"`
	Event     string         `json:"event"`
	Timestamp string         `json:"timestamp"`
	Data      map[string]any `json:"data"`
	Meta      Meta           `json:"meta"`
}

// Meta is the payload's meta object.
type Meta struct {
	Source  string `json:"source"`
	Version string `json:"version"`
}

// Outbox is the one store method Emit writes through; a service that emits events lists it in
// its own store interface.
type Outbox interface {
	InsertOutboxEvent(ctx context.Context, e *store.OutboxEvent) error
}

// Emit writes e to the outbox through w, which should be the transaction of the change that
// caused it, so that the change and its event commit together.
func Emit(ctx context.Context, w Outbox, e Event) error {
	if e.Data == nil {
		e.Data = map[string]any{}
	}
	if e.ID == "" {
		e.ID = uuid.NewString()
	}
	p := Payload{ID: e.ID, Event: e.Name, Timestamp: time.Now().UTC().Format(time.RFC3339Nano),
		Data: e.Data, Meta: Meta{Source: Source, Version: Version}}
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("events: encode %s: %w", e.Name, err)
	}
	return w.InsertOutboxEvent(ctx, &store.OutboxEvent{ID: p.ID, Event: e.Name, Payload: b, UserID: e.UserID, ProjectID: e.ProjectID})
}

// Client frame types sent over the WebSocket.
const (
	FrameTaskStatus   = "task:status"
	FrameTaskProgress = "task:progress"
	FrameAssetSync    = "asset:sync"
)

// Frame is a WebSocket message for the subscribers of a project: {type, data}.
type Frame struct {
	ProjectID string
	UserID    string // the owner; frames without a project go to this user's connections
	Type      string
	Data      map[string]any
}

// Notifier delivers client frames (the WebSocket hub; across hosts on PostgreSQL).
type Notifier interface {
	Notify(ctx context.Context, f Frame)
}

// Discard is a Notifier that drops every frame (no WebSocket hub wired).
type Discard struct{}

// Notify implements Notifier.
func (Discard) Notify(context.Context, Frame) {}
