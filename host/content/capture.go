package content

import (
	"context"
	"errors"

	"github.com/reelforge/reelforge/host/events"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// CaptureTasks pages the caller's capture tasks (the shoots convert-to-task made).
func (s *Service) CaptureTasks(ctx context.Context, p store.ListCaptureTasksParams) ([]store.CaptureTask, int, error) {
	switch p.Status {
	case "", store.CapturePending, store.CaptureCompleted, store.CaptureCancelled:
	default:
		return nil, 0, errcode.Invalid("status", "must be pending, completed or cancelled")
	}
	return s.st.ListCaptureTasks(ctx, p)
}

// CaptureTask returns the caller's capture task; anyone else's is 404, so ids cannot be probed.
func (s *Service) CaptureTask(ctx context.Context, userID, id string) (*store.CaptureTask, error) {
	t, err := s.st.GetCaptureTask(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && t.UserID != userID) {
		return nil, errcode.New(errcode.NotFound, "Capture task not found")
	}
	return t, err
}

// FinishCaptureTask moves the caller's pending capture task to completed (emitting
// task.completed, SPEC.md: "a shooting task is completed") or cancelled, in one transaction. A
// task no longer pending is 409.
func (s *Service) FinishCaptureTask(ctx context.Context, userID, id, status string) (*store.CaptureTask, error) {
	var t *store.CaptureTask
	err := store.InTx(ctx, s.st, func(tx Store) error {
		var err error
		t, err = tx.SetCaptureTaskStatus(ctx, store.CaptureTaskStatusParams{ID: id, UserID: userID,
			From: []string{store.CapturePending}, Status: status})
		if err != nil || status != store.CaptureCompleted {
			return err
		}
		return events.Emit(ctx, tx, events.Event{Name: events.TaskCompleted, UserID: t.UserID, ProjectID: t.ProjectID,
			Data: map[string]any{"taskId": t.ID, "captureTaskId": t.ID, "projectId": t.ProjectID, "userId": t.UserID,
				"type": t.TaskType, "title": t.Title}})
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, errcode.New(errcode.NotFound, "Capture task not found")
	case errors.Is(err, store.ErrStale):
		cur, _ := s.st.GetCaptureTask(ctx, id) // only for the message: without it the state reads "not pending"
		state := "not pending"
		if cur != nil {
			state = cur.Status
		}
		return nil, errcode.Newf(errcode.Validation, "Capture task is %s: only a pending task can be %s", state, status).WithStatus(409)
	}
	return t, err
}
