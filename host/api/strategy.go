package api

import (
	"bytes"
	"encoding/json"

	"github.com/gofiber/fiber/v2"

	"github.com/reelforge/reelforge/host/access"
	"github.com/reelforge/reelforge/host/content"
	"github.com/reelforge/reelforge/sdk/errcode"
)

func (s *Server) strategyRoutes(r fiber.Router) {
	r.Post("/strategy/diagnosis", s.diagnosis)
	r.Get("/strategy/blueprint/:projectId", s.blueprint)
	r.Post("/strategy/rewrite", s.rewrite)
}

// diagnosisAnswers reads answers given as strings or {question, answer} objects (DECISIONS.md).
func diagnosisAnswers(raw json.RawMessage) ([]content.Answer, error) {
	bad := errcode.Invalid("answers", "must be an array of strings or of {question, answer} objects")
	if len(bytes.TrimSpace(raw)) == 0 || string(raw) == "null" {
		return nil, errcode.Invalid("answers", "is required")
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, bad
	}
	out := make([]content.Answer, 0, len(items))
	for _, it := range items {
		var str string
		if err := json.Unmarshal(it, &str); err == nil {
			out = append(out, content.Answer{Answer: str})
			continue
		}
		var obj struct {
			Question string `json:"question"`
			Answer   any    `json:"answer"`
		}
		if err := json.Unmarshal(it, &obj); err != nil {
			return nil, bad
		}
		a := content.Answer{Question: obj.Question}
		switch v := obj.Answer.(type) {
		case string:
			a.Answer = v
		case nil:
		default:
			b, _ := json.Marshal(v) // v was decoded from JSON: it encodes
			a.Answer = string(b)
		}
		out = append(out, a)
	}
	return out, nil
}

func (s *Server) diagnosis(c *fiber.Ctx) error {
	var in struct {
		projectRef
		Answers json.RawMessage `json:"answers"`
	}
	if err := decode(c, &in); err != nil {
		return err
	}
	answers, err := diagnosisAnswers(in.Answers)
	if err != nil {
		return err
	}
	proj, err := s.bodyProject(c, in.id())
	if err != nil {
		return err
	}
	rep, bp, err := s.Content.Diagnose(s.ctx(c), answers, proj)
	if err != nil {
		return err
	}
	data := fiber.Map{"report": rep, "blueprint": bp}
	if proj != nil {
		data["project_id"] = proj.ID
	}
	return ok(c, fiber.StatusOK, data)
}

func (s *Server) blueprint(c *fiber.Ctx) error {
	p, err := access.Project(s.ctx(c), s.Store, principal(c), c.Params("projectId"), access.InPath)
	if err != nil {
		return err
	}
	var bp any
	if len(p.Blueprint) > 0 && string(p.Blueprint) != "null" {
		bp = json.RawMessage(p.Blueprint)
	}
	return ok(c, fiber.StatusOK, fiber.Map{"project_id": p.ID, "blueprint": bp, "calendar": content.Calendar(p.Blueprint)})
}

func (s *Server) rewrite(c *fiber.Ctx) error {
	var in struct {
		Content string `json:"content"`
		Script  string `json:"script"`
		Style   string `json:"style"`
	}
	if err := decode(c, &in); err != nil {
		return err
	}
	if in.Content == "" {
		in.Content = in.Script
	}
	out, style, source, err := s.Content.Rewrite(s.ctx(c), in.Content, in.Style)
	if err != nil {
		return err
	}
	res := fiber.Map{"rewrittenScript": out, "style": style, "source": source}
	if source == "template" {
		res["note"] = content.RewriteNote(style)
	}
	return ok(c, fiber.StatusOK, res)
}
