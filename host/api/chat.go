package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/reelforge/reelforge/host/content"
)

func (s *Server) chatRoutes(r fiber.Router) {
	r.Post("/ai/chat", s.chat)
}

func (s *Server) chat(c *fiber.Ctx) error {
	var in struct {
		projectRef
		Message      string `json:"message"`
		ChatflowType string `json:"chatflowType"`
		SessionID    string `json:"session_id"`
	}
	if err := decode(c, &in); err != nil {
		return err
	}
	if err := fieldLen("message", in.Message, true, 4000); err != nil {
		return err
	}
	if err := fieldLen("session_id", in.SessionID, false, 200); err != nil {
		return err
	}
	pid, err := s.checkedProject(c, in.id())
	if err != nil {
		return err
	}
	p := principal(c)
	ans, err := s.Content.Chat(s.ctx(c), content.ChatInput{UserID: p.UserID, Role: p.Role, ProjectID: pid,
		Message: in.Message, ChatflowType: in.ChatflowType, SessionID: in.SessionID})
	if err != nil {
		return err
	}
	data := fiber.Map{"response": ans.Response, "citations": ans.Citations}
	if ans.SessionID != "" {
		data["session_id"] = ans.SessionID
	}
	if ans.Degraded {
		data["degraded"] = true
		data["degraded_reason"] = ans.Reason
	}
	return ok(c, fiber.StatusOK, data)
}
