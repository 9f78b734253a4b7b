package content

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/reelforge/reelforge/host/kb/llm"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// ChatflowClient calls the chatflow tool: POST {BaseURL}/prediction/<id> with {question},
// answered with {text, sourceDocuments}.
type ChatflowClient struct {
	BaseURL string
	KBID    string // CHATFLOW_KB_ID: the chatflow behind chatflowType kb
	HTTP    *http.Client
}

// NewChatflowClient returns a client, or nil when baseURL is empty.
func NewChatflowClient(baseURL, kbID string) *ChatflowClient {
	if strings.TrimSpace(baseURL) == "" {
		return nil
	}
	return &ChatflowClient{BaseURL: strings.TrimRight(baseURL, "/"), KBID: kbID, HTTP: &http.Client{Timeout: 30 * time.Second}}
}

// Citation is a chat citation: where a passage comes from and the passage.
type Citation struct {
	ChunkID  string `json:"chunk_id,omitempty"`
	Source   string `json:"source"`
	Document string `json:"document,omitempty"`
	Excerpt  string `json:"excerpt"`
}

type prediction struct {
	Text            string `json:"text"`
	SourceDocuments []struct {
		PageContent string         `json:"pageContent"`
		Metadata    map[string]any `json:"metadata"`
	} `json:"sourceDocuments"`
}

// Predict asks chatflow id the question and returns its text and citations. vars, when not
// empty, go to the chatflow as overrideConfig.vars (the project the knowledge lookup is for).
func (c *ChatflowClient) Predict(ctx context.Context, id, question string, vars map[string]any) (string, []Citation, error) {
	const op = "content.Predict"
	req := map[string]any{"question": question}
	if len(vars) > 0 {
		req["overrideConfig"] = map[string]any{"vars": vars}
	}
	body, _ := json.Marshal(req)
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.BaseURL+"/prediction/"+id, bytes.NewReader(body))
	if err != nil {
		return "", nil, errcode.E(op, errcode.Chatflow, "", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := c.HTTP.Do(hreq)
	if err != nil {
		return "", nil, errcode.E(op, errcode.Chatflow, "", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return "", nil, errcode.E(op, errcode.Chatflow, "", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return "", nil, errcode.E(op, errcode.Chatflow, "", fmt.Errorf("chatflow status %d", resp.StatusCode))
	}
	var p prediction
	if err := json.Unmarshal(raw, &p); err != nil {
		return "", nil, errcode.E(op, errcode.Chatflow, "", fmt.Errorf("decode prediction: %w", err))
	}
	if strings.TrimSpace(p.Text) == "" {
		return "", nil, errcode.E(op, errcode.Chatflow, "", fmt.Errorf("empty prediction"))
	}
	cits := []Citation{}
	for _, d := range p.SourceDocuments {
		cit := Citation{Source: metaString(d.Metadata, "source", "filename", "source_name", "title"),
			Document: metaString(d.Metadata, "document", "title"), ChunkID: metaString(d.Metadata, "chunk_id", "id"),
			Excerpt: clip(d.PageContent, 500)}
		if cit.Source == "" {
			cit.Source = "chatflow"
		}
		cits = append(cits, cit)
	}
	return p.Text, cits, nil
}

func metaString(m map[string]any, keys ...string) string {
	for _, k := range keys {
		if v, ok := m[k]; ok {
			switch x := v.(type) {
			case string:
				if x != "" {
					return x
				}
			case float64, bool:
				return fmt.Sprint(x)
			}
		}
	}
	return ""
}

// KBHit is one knowledge-base passage for the local chat answer.
type KBHit struct {
	ChunkID  string
	Text     string
	Source   string
	Document string
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
}

// ChatAnswer is the chat response.
type ChatAnswer struct {
	Response  string     `json:"response"`
	Citations []Citation `json:"citations"`
	Degraded  bool       `json:"degraded,omitempty"`
	Reason    string     `json:"degraded_reason,omitempty"`
}

// Chat answers through the chatflow tool for chatflowType kb; when the tool is not configured,
// down or failing, it answers from a local template over the knowledge base (degraded).
func (s *Service) Chat(ctx context.Context, in ChatInput) (*ChatAnswer, error) {
	msg := strings.TrimSpace(in.Message)
	if msg == "" {
		return nil, errcode.Invalid("message", "is required")
	}
	if len([]rune(msg)) > 4000 {
		return nil, errcode.Invalid("message", "must be at most 4000 characters")
	}
	typ := strings.ToLower(strings.TrimSpace(in.ChatflowType))
	if typ == "" {
		typ = "kb"
	}
	reason := "chatflow tool not configured"
	if typ != "kb" {
		reason = "no chatflow for type " + typ
	} else if s.chatflow != nil && s.chatflow.KBID != "" {
		var vars map[string]any
		if in.ProjectID != "" {
			vars = map[string]any{"project_id": in.ProjectID}
		}
		text, cits, err := s.chatflow.Predict(ctx, s.chatflow.KBID, in.Message, vars)
		if err == nil {
			return &ChatAnswer{Response: text, Citations: cits}, nil
		}
		s.log.Warn("chatflow unavailable, answering locally", "err", err.Error())
		reason = "chatflow tool unavailable"
	}
	ans := s.localAnswer(ctx, in, msg)
	ans.Degraded, ans.Reason = true, reason
	return ans, nil
}

// localAnswer is the local prompt template of SPEC.md Errors 7: knowledge-base passages answered
// extractively (or by the model when configured), else general guidance.
func (s *Service) localAnswer(ctx context.Context, in ChatInput, msg string) *ChatAnswer {
	var hits []KBHit
	if s.kb != nil {
		h, err := s.kb.SearchKB(ctx, in.UserID, in.Role, in.ProjectID, msg, 5)
		if err != nil {
			s.log.Warn("local chat: knowledge search failed", "err", err.Error())
		}
		hits = h
	}
	if len(hits) > 0 {
		frags := make([]string, len(hits))
		cits := make([]Citation, len(hits))
		for i, h := range hits {
			frags[i] = h.Text
			cits[i] = Citation{ChunkID: h.ChunkID, Source: h.Source, Document: h.Document, Excerpt: clip(h.Text, 300)}
		}
		answer := ""
		if s.llm != nil {
			if out, err := s.llm.Chat(ctx, s.model, llm.Prompt(msg, frags)); err == nil {
				answer, _ = llm.CheckCitations(out, len(frags))
			}
		}
		if answer == "" {
			answer = llm.Extractive{}.Answer(msg, frags)
		}
		if answer != "" {
			return &ChatAnswer{Response: answer, Citations: cits}
		}
	}
	return &ChatAnswer{Response: guidance(msg), Citations: []Citation{}}
}

// guidance is the template answer when no knowledge-base passage applies.
func guidance(msg string) string {
	zh := hasHan(msg)
	low := strings.ToLower(msg)
	for _, g := range guides {
		for _, k := range g.keys {
			if strings.Contains(low, k) {
				if zh {
					return g.zh
				}
				return g.en
			}
		}
	}
	if zh {
		return "知识库助手暂时不可用，以下是通用建议：先明确目标受众和他们的痛点；开头三秒给出结果或冲突；每条内容只讲一个观点；结尾给出明确的行动指引。知识库中没有找到可引用的依据，请稍后再试以获得带引用的回答。"
	}
	return "The knowledge assistant is unavailable right now, so here is general guidance: know who the video is for and " +
		"what problem it solves; show the payoff or the conflict in the first three seconds; keep one idea per video; " +
		"end with a clear call to action. No citable passage was found in the knowledge base; ask again later for a cited answer."
}

var guides = []struct {
	keys   []string
	en, zh string
}{
	{[]string{"hook", "开头", "钩子", "opening"},
		"A good hook earns the next three seconds: open on the result, a surprising fact or a conflict; speak to one viewer " +
			"and their problem; show motion or a face in the first frame; promise a payoff the video then delivers. " +
			"(General guidance: the knowledge assistant is unavailable, so this answer has no citations.)",
		"好的开头要在前三秒留住观众：直接展示结果、反常识的事实或冲突；对一个具体的人说话，点出他的痛点；第一帧要有动作或人脸；承诺一个结尾会兑现的收获。（通用建议：知识库助手暂不可用，本回答无引用。）"},
	{[]string{"title", "标题", "caption", "文案"},
		"Strong titles name the viewer, the benefit and a number or a time frame, stay under about 20 words, and match what " +
			"the first seconds show. (General guidance: the knowledge assistant is unavailable, so this answer has no citations.)",
		"好标题要点明目标人群、收益和数字或时间，尽量简短，并与视频前几秒的内容一致。（通用建议：知识库助手暂不可用，本回答无引用。）"},
	{[]string{"often", "frequency", "cadence", "schedule", "频率", "更新", "发布时间"},
		"Post on a cadence you can keep: three to five short videos a week beats a burst and a pause; publish when your " +
			"audience is free (lunch and 19:00-22:00 are common peaks) and review the numbers weekly. " +
			"(General guidance: the knowledge assistant is unavailable, so this answer has no citations.)",
		"选择能长期坚持的节奏：每周三到五条比集中爆发后停更更好；在受众空闲时发布（午间和19:00-22:00较常见），每周复盘数据。（通用建议：知识库助手暂不可用，本回答无引用。）"},
}

func hasHan(s string) bool {
	for _, r := range s {
		if r >= 0x4E00 && r <= 0x9FFF {
			return true
		}
	}
	return false
}
