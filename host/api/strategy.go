package api

import (
	"context"
	"encoding/json"

	"github.com/danielgtaylor/huma/v2"

	"github.com/reelforge/reelforge/host/access"
	"github.com/reelforge/reelforge/host/content"
)

// strategyOperations declares the Strategy family (typed: operations.go): a creator's answers
// diagnosed into a report and a 30-day blueprint, the blueprint's calendar, and script rewrites.
func (s *Server) strategyOperations(api huma.API) {
	const tag = "Strategy"
	register(api, op{Method: "POST", Path: "/api/strategy/diagnosis", Tag: tag,
		Summary: "Diagnose answers into a report and a blueprint", Errors: []int{403},
		Desc: "With a project the blueprint is stored on it, and its days become the project's strategy tasks."}, s.diagnosis)
	register(api, op{Method: "GET", Path: "/api/strategy/blueprint/{projectId}", Tag: tag,
		Summary: "A project's blueprint and calendar", Errors: []int{403, 404}}, s.blueprint)
	register(api, op{Method: "POST", Path: "/api/strategy/rewrite", Tag: tag, Summary: "Rewrite a script in a style"}, s.rewrite)
}

type diagnosisInput struct {
	Body struct {
		Answers    []givenAnswer `json:"answers"`
		ProjectID  string        `json:"project_id,omitempty" doc:"the project the blueprint is stored on"`
		ProjectID2 string        `json:"projectId,omitempty" doc:"alias of project_id"`
	}
}

// givenAnswer is one diagnosis answer as a client gives it: a string, or a {question, answer}
// object (DECISIONS.md, Shapes) whose answer, when not a string, is kept as its JSON text.
type givenAnswer content.Answer

func (a *givenAnswer) UnmarshalJSON(b []byte) error {
	var text string
	if err := json.Unmarshal(b, &text); err == nil {
		*a = givenAnswer{Answer: text}
		return nil
	}
	var obj struct {
		Question string          `json:"question"`
		Answer   json.RawMessage `json:"answer"`
	}
	if err := json.Unmarshal(b, &obj); err != nil {
		return err
	}
	*a = givenAnswer{Question: obj.Question}
	if err := json.Unmarshal(obj.Answer, &a.Answer); err != nil && string(obj.Answer) != "null" {
		a.Answer = string(obj.Answer)
	}
	return nil
}

// Schema: a string or a {question, answer} object.
func (givenAnswer) Schema(r huma.Registry) *huma.Schema {
	return &huma.Schema{OneOf: []*huma.Schema{
		{Type: huma.TypeString, Description: "an answer without its question"},
		{Type: huma.TypeObject, AdditionalProperties: true, Properties: map[string]*huma.Schema{
			"question": {Type: huma.TypeString},
			"answer":   {Description: "the answer's text (any other JSON value is kept as its JSON text)", AnyOf: []*huma.Schema{{}, {Type: "null"}}},
		}},
	}}
}

type diagnosisAnswer struct {
	Report    content.Report    `json:"report"`
	Blueprint content.Blueprint `json:"blueprint" doc:"a 30-day plan"`
	ProjectID string            `json:"project_id,omitempty"`
}

// diagnosis serves POST /api/strategy/diagnosis {answers, project_id?}.
func (s *Server) diagnosis(ctx context.Context, in *diagnosisInput) (*Data[diagnosisAnswer], error) {
	answers := make([]content.Answer, len(in.Body.Answers))
	for i, a := range in.Body.Answers {
		answers[i] = content.Answer(a)
	}
	proj, err := s.namedProject(ctx, firstSet(in.Body.ProjectID, in.Body.ProjectID2))
	if err != nil {
		return nil, err
	}
	rep, bp, err := s.Content.Diagnose(ctx, answers, proj)
	if err != nil {
		return nil, err
	}
	out := diagnosisAnswer{Report: *rep, Blueprint: *bp}
	if proj != nil {
		out.ProjectID = proj.ID
	}
	return answerData(out)
}

type blueprintInput struct {
	ProjectID string `path:"projectId"`
}

type blueprintAnswer struct {
	ProjectID string                `json:"project_id"`
	Blueprint jsonObject            `json:"blueprint" doc:"as stored on the project; null before a diagnosis"`
	Calendar  []content.CalendarDay `json:"calendar" doc:"the blueprint's days by date"`
}

// blueprint serves GET /api/strategy/blueprint/{projectId}.
func (s *Server) blueprint(ctx context.Context, in *blueprintInput) (*Data[blueprintAnswer], error) {
	p, err := access.Project(ctx, s.Store, caller(ctx), in.ProjectID, access.InPath)
	if err != nil {
		return nil, err
	}
	return answerData(blueprintAnswer{ProjectID: p.ID, Blueprint: jsonObject(p.Blueprint), Calendar: content.Calendar(p.Blueprint)})
}

type rewriteInput struct {
	Body struct {
		Content string `json:"content,omitempty" doc:"the script (required, here or as script)"`
		Script  string `json:"script,omitempty" doc:"alias of content"`
		Style   string `json:"style,omitempty" doc:"humorous, professional (the default), emotional, concise, casual or storytelling, or an alias of one"`
	}
}

// rewrite serves POST /api/strategy/rewrite {content, style?}.
func (s *Server) rewrite(ctx context.Context, in *rewriteInput) (*Data[content.Rewritten], error) {
	rw, err := s.Content.Rewrite(ctx, firstSet(in.Body.Content, in.Body.Script), in.Body.Style)
	if err != nil {
		return nil, err
	}
	return answerData(*rw)
}
