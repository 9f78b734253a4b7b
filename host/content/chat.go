package content

import (
	"context"
	"strings"
	"time"

	"github.com/reelforge/reelforge/host/auth"
	"github.com/reelforge/reelforge/host/kb/llm"
	"github.com/reelforge/reelforge/plugins/chatflow"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// Citation is a chat citation (SPEC.md: chunk_id, source, document, excerpt).
type Citation struct {
	ChunkID  string `json:"chunk_id,omitempty"`
	Source   string `json:"source"`
	Document string `json:"document,omitempty"`
	Excerpt  string `json:"excerpt"`
}

// KBHit is one knowledge-base passage for the local chat answer.
type KBHit struct {
	ChunkID  string
	Text     string
	Heading  string
	Source   string
	Document string
	Score    float64
}

// Searcher finds knowledge-base passages the user may read (the kb service satisfies it through
// a small adapter in host/app).
type Searcher interface {
	SearchKB(ctx context.Context, userID, role, projectID, query string, topK int) ([]KBHit, error)
}

// ChatInput is a chat message.
type ChatInput struct {
	UserID, Role, ProjectID string
	Message                 string
	ChatflowType            string
	// SessionID continues a conversation with the chatflow tool (its memory sees the earlier turns);
	// empty: the tool starts one, and ChatAnswer.SessionID names it.
	SessionID string
}

// ChatAnswer is the chat response.
type ChatAnswer struct {
	Response  string     `json:"response"`
	Citations []Citation `json:"citations"`
	Degraded  bool       `json:"degraded,omitempty"`
	Reason    string     `json:"degraded_reason,omitempty"`
	// SessionID is the conversation the chatflow tool answered in ("" when it did not answer).
	SessionID string `json:"session_id,omitempty"`
}

// Chat answers through the chatflow tool (plugins/chatflow.Ask) for chatflowType kb, the chatflow
// CHATFLOW_KB_ID, in the conversation in.SessionID, with the same vars as a chatflow run (user and
// project); when the tool is not configured, down or failing, or for another chatflowType, it
// answers from the local prompt template over the knowledge base (degraded).
func (s *Service) Chat(ctx context.Context, in ChatInput) (*ChatAnswer, error) {
	msg := strings.TrimSpace(in.Message)
	if msg == "" {
		return nil, errcode.Invalid("message", "is required")
	}
	if len([]rune(msg)) > 4000 {
		return nil, errcode.Invalid("message", "must be at most 4000 characters")
	}
	typ := strings.ToLower(strings.TrimSpace(in.ChatflowType))
	opts := s.chatflow
	opts.Logger = s.log
	id := opts.DefaultChatflowID
	if typ != "" && typ != "kb" {
		id = "" // only the knowledge chatflow is configured: other types answer locally
	}
	if s.llm != nil {
		opts.GenerateFunc = s.generate
	}
	var search chatflow.SearchFunc
	if s.kb != nil {
		search = func(ctx context.Context, query string, topK int) ([]engine.SearchHit, error) {
			hits, err := s.kb.SearchKB(ctx, in.UserID, in.Role, in.ProjectID, query, topK)
			out := make([]engine.SearchHit, 0, len(hits))
			for _, h := range hits {
				out = append(out, engine.SearchHit{ChunkID: h.ChunkID, ChunkText: h.Text, Heading: h.Heading,
					SourceName: h.Source, Document: h.Document, Score: h.Score})
			}
			return out, err
		}
	}
	q := chatflow.Question{Text: in.Message, ChatflowID: id, SessionID: strings.TrimSpace(in.SessionID),
		Vars: chatflow.Vars(in.UserID, in.ProjectID), HostURL: s.hostURL}
	if id != "" {
		q.Credential = s.chatCredential(opts, in)
	}
	a, degraded, err := chatflow.Ask(ctx, opts, q, search)
	if err != nil {
		return nil, err
	}
	ans := &ChatAnswer{Response: a.Text, Citations: make([]Citation, 0, len(a.Citations)), Degraded: degraded, Reason: a.Degraded,
		SessionID: a.SessionID}
	for _, c := range a.Citations {
		src := c.Source
		if src == "" {
			src = firstNonEmpty(c.Document, "chatflow")
		}
		ans.Citations = append(ans.Citations, Citation{ChunkID: c.ChunkID, Source: src, Document: c.Document, Excerpt: c.Excerpt})
	}
	return ans, nil
}

// CredentialIssuer signs tool credentials (auth.Service.IssueTool).
type CredentialIssuer interface {
	IssueTool(g auth.ToolGrant) (string, error)
}

// chatCredential is the tool credential of one chat answer: the chatflow tool may read the
// asker's knowledge in the asked project (/api/knowledge/context and /search) while it answers.
// Not tied to a run, it cannot die with one: it expires once every attempt of the prediction has
// had its time (Options.Timeout and retries), plus half a minute. "" without an issuer.
func (s *Service) chatCredential(opts chatflow.Options, in ChatInput) string {
	if s.creds == nil || in.UserID == "" {
		return ""
	}
	o := opts.WithDefaults()
	ttl := time.Duration(o.Retries+1)*o.Timeout + time.Duration(o.Retries)*o.RetryBackoff + 30*time.Second
	now := time.Now()
	if s.now != nil {
		now = s.now()
	}
	tok, err := s.creds.IssueTool(auth.ToolGrant{UserID: in.UserID, ProjectID: in.ProjectID, Expires: now.Add(ttl)})
	if err != nil {
		s.log.Warn("content: no tool credential for the chat answer", "err", err)
		return ""
	}
	return tok
}

// generate lets the chat fallback ask the language model.
func (s *Service) generate(ctx context.Context, req *engine.GenerateRequest) (*engine.GenerateResult, error) {
	msgs := []llm.Message{{Role: "user", Content: req.Prompt}}
	if req.System != "" {
		msgs = append([]llm.Message{{Role: "system", Content: req.System}}, msgs...)
	}
	out, err := s.llm.Chat(ctx, s.model, msgs)
	if err != nil {
		return nil, err
	}
	return &engine.GenerateResult{Text: out, OK: strings.TrimSpace(out) != "" && !engine.Refused(out), Model: s.model}, nil
}

func hasHan(s string) bool {
	for _, r := range s {
		if r >= 0x4E00 && r <= 0x9FFF {
			return true
		}
	}
	return false
}
