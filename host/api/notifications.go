package api

import (
	"context"

	"github.com/danielgtaylor/huma/v2"
	"github.com/gofiber/fiber/v2"

	"github.com/reelforge/reelforge/host/events"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// notificationOperations: the outbound event webhook's connection test and queue status
// (DECISIONS.md, Events and notifications), for operators only: the test sends an event signed
// with the host's secret, and the status describes the receiver.
func (s *Server) notificationOperations(api huma.API) {
	const tag = "Events"
	register(api, op{Method: "POST", Path: "/api/webhooks/test-notification", Tag: tag,
		Summary: "Send a test event to the configured webhook", Errors: []int{403}, Before: []fiber.Handler{s.requireOperator},
		Desc: "Admins and automation keys only. The event carries the given name with data.test = true, so a receiver can tell it from a real one."},
		s.testNotification)
	register(api, op{Method: "GET", Path: "/api/webhooks/notification-status", Tag: tag, Summary: "Outbound event queue status",
		Errors: []int{403}, Before: []fiber.Handler{s.requireOperator}}, s.notificationStatus)
}

// requireOperator lets through admins and automation keys (403 for everyone else).
func (s *Server) requireOperator(c *fiber.Ctx) error {
	if !principal(c).ActsForAll() {
		return errcode.New(errcode.Authorization, "Only an admin or an automation key may use this route")
	}
	return c.Next()
}

func (s *Server) notificationsReady() error {
	if s.Notifications == nil {
		return errcode.New(errcode.ResourceExhausted, "Event notifications are not available")
	}
	return nil
}

type testNotificationInput struct {
	Body *struct { // optional
		Event string `json:"event,omitempty" maxLength:"100" doc:"default test.notification"`
	}
}

type testNotificationAnswer struct {
	events.TestResult
	Event string `json:"event"`
}

// testNotification posts a signed test event to AUTOMATION_EVENT_WEBHOOK_URL at once and answers
// {delivered, status_code, latency_ms, error?}. An unreachable receiver is a result, not an error.
// The event is the caller's name, with data.test = true, so a receiver can tell it from a real one.
func (s *Server) testNotification(ctx context.Context, in *testNotificationInput) (*Data[testNotificationAnswer], error) {
	if err := s.notificationsReady(); err != nil {
		return nil, err
	}
	event := "test.notification"
	if in.Body != nil && in.Body.Event != "" {
		event = in.Body.Event
	}
	return answerData(testNotificationAnswer{*s.Notifications.Test(ctx, event), event})
}

// notificationStatus answers {enabled, target, pending, delivered, failed, dead, last_error,
// batch_size, batch_interval_ms, enabled_events} (plus skipped, last_error_at, timeout_ms).
func (s *Server) notificationStatus(ctx context.Context, _ *struct{}) (*Data[events.Status], error) {
	if err := s.notificationsReady(); err != nil {
		return nil, err
	}
	st, err := s.Notifications.Status(ctx)
	if err != nil {
		return nil, err
	}
	return answerData(*st)
}
