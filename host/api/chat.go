package api

import (
	"context"

	"github.com/reelforge/reelforge/host/content"
)

// POST /api/ai/chat is declared with the Content family (contentOperations).

type chatInput struct {
	Body struct {
		ProjectRef
		Message      string `json:"message" minLength:"1" maxLength:"4000"`
		ChatflowType string `json:"chatflowType,omitempty" doc:"kb selects the knowledge chatflow"`
		SessionID    string `json:"session_id,omitempty" maxLength:"200" doc:"continues a conversation: the chatflow tool's memory sees its earlier turns"`
	}
}

func (s *Server) chat(ctx context.Context, in *chatInput) (*Data[content.ChatAnswer], error) {
	b := in.Body
	pid, err := s.namedProjectID(ctx, b.ProjectID, b.ProjectID2)
	if err != nil {
		return nil, err
	}
	p := caller(ctx)
	ans, err := s.Content.Chat(ctx, content.ChatInput{UserID: p.UserID, Role: p.Role, ProjectID: pid,
		Message: b.Message, ChatflowType: b.ChatflowType, SessionID: b.SessionID})
	if err != nil {
		return nil, err
	}
	return answerData(*ans)
}
