package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/reelforge/reelforge/sdk/errcode"
)

// notificationRoutes: the outbound event webhook's connection test and queue status
// (DECISIONS.md, Events and notifications), for operators only: the test sends an event signed
// with the host's secret, and the status describes the receiver.
func (s *Server) notificationRoutes(r fiber.Router) {
	r.Post("/webhooks/test-notification", s.requireOperator, s.testNotification)
	r.Get("/webhooks/notification-status", s.requireOperator, s.notificationStatus)
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

// testNotification posts a signed test event to AUTOMATION_EVENT_WEBHOOK_URL at once and answers
// {delivered, status_code, latency_ms, error?}. An unreachable receiver is a result, not an error.
// The event is the caller's name, with data.test = true, so a receiver can tell it from a real one.
func (s *Server) testNotification(c *fiber.Ctx) error {
	if err := s.notificationsReady(); err != nil {
		return err
	}
	var in struct {
		Event string `json:"event"`
	}
	if err := decode(c, &in); err != nil {
		return err
	}
	if in.Event == "" {
		in.Event = "test.notification"
	}
	if err := fieldLen("event", in.Event, true, 100); err != nil {
		return err
	}
	res := s.Notifications.Test(s.ctx(c), in.Event)
	data := fiber.Map{"delivered": res.Delivered, "status_code": res.StatusCode, "latency_ms": res.LatencyMS,
		"event": in.Event, "event_id": res.EventID}
	if res.Error != "" {
		data["error"] = res.Error
	}
	return ok(c, fiber.StatusOK, data)
}

// notificationStatus answers {enabled, target, pending, delivered, failed, dead, last_error,
// batch_size, batch_interval_ms, enabled_events} (plus skipped, last_error_at, timeout_ms).
func (s *Server) notificationStatus(c *fiber.Ctx) error {
	if err := s.notificationsReady(); err != nil {
		return err
	}
	st, err := s.Notifications.Status(s.ctx(c))
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, fiber.Map{"enabled": st.Enabled, "target": st.Target, "pending": st.Pending,
		"delivered": st.Delivered, "failed": st.Failed, "dead": st.Dead, "skipped": st.Skipped,
		"last_error": st.LastError, "last_error_at": st.LastErrorAt, "batch_size": st.BatchSize,
		"batch_interval_ms": st.BatchIntervalMS, "timeout_ms": st.TimeoutMS, "enabled_events": st.EnabledEvents})
}
