// Ask: an answer with checked citations from a search's hits, and the chatflow tool's context.

package kb

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/kb/clean"
	"github.com/reelforge/reelforge/host/kb/llm"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/internal/extract"
	"github.com/reelforge/reelforge/sdk/engine"
)

// NoBasisAnswer is the answer of an ask without hits (SPEC.md rule 7): extract.NoBasis, the one
// wording of the refusal on every answer path.
const NoBasisAnswer = extract.NoBasis

// Citation is a cited fragment (SPEC.md: chunk_id, source, document, excerpt).
type Citation struct {
	Number     int    `json:"number"` // the [#n] of the answer
	ChunkID    string `json:"chunk_id"`
	Source     string `json:"source"`
	Document   string `json:"document"`
	DocumentID string `json:"document_id"`
	Excerpt    string `json:"excerpt"`
}

// Answer is the result of Ask.
type Answer struct {
	QueryID   string     `json:"query_id"`
	Answer    string     `json:"answer"`
	Citations []Citation `json:"citations"`
	Hits      []Hit      `json:"hits"`
	Cited     bool       `json:"cited"`
	Model     string     `json:"model"`
}

func excerpt(text string, n int) string {
	text = strings.Join(strings.Fields(text), " ")
	if r := []rune(text); len(r) > n {
		return string(r[:n]) + "…"
	}
	return text
}

func citationOf(n int, h Hit) Citation {
	doc := h.DocumentTitle
	if doc == "" {
		doc = h.DocumentID
	}
	return Citation{Number: n, ChunkID: h.ChunkID, Source: h.SourceName, Document: doc, DocumentID: h.DocumentID, Excerpt: excerpt(h.ChunkText, 300)}
}

// Ask answers from the hits with citations (SPEC.md rules 7 and 8): no hits, no model call and
// the uncertain answer; otherwise numbered fragments answered by the language model when one is
// configured (the extractive answerer otherwise), the citations checked, and the query logged.
func (s *Service) Ask(ctx context.Context, p SearchParams) (*Answer, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	start := time.Now()
	ans, err := s.answer(ctx, p)
	if err != nil {
		return nil, err
	}
	// Strings and numbers: both always encode.
	results, _ := json.Marshal(summarize(ans.Hits))
	cits, _ := json.Marshal(ans.Citations)
	q := &store.KnowledgeQuery{ID: ans.QueryID, UserID: p.UserID, ProjectID: p.ProjectID, Mode: store.QueryAsk, QueryText: p.Query,
		TopK: p.TopK, LatencyMS: ms(time.Since(start)), Results: results, AnswerText: ans.Answer, Citations: cits, Cited: ans.Cited}
	if err := s.st.LogQuery(ctx, q); err != nil {
		return nil, fmt.Errorf("kb: log ask: %w", err)
	}
	return ans, nil
}

// answer is Ask without its log: the search, the hits that ground an answer (basis), and the
// answer with its checked citations. Hits are the grounding hits, numbered as the citations.
func (s *Service) answer(ctx context.Context, p SearchParams) (*Answer, error) {
	p.Log = false
	hits, err := s.search(ctx, p)
	if err != nil {
		return nil, err
	}
	if hits, err = s.basis(ctx, p.UserID, p.Query, hits); err != nil {
		return nil, err
	}
	if hits = holdingKind(p.Query, hits); hits == nil {
		hits = []Hit{}
	}
	ans := &Answer{QueryID: uuid.NewString(), Hits: hits, Citations: []Citation{}}
	if len(hits) == 0 {
		ans.Answer = NoBasisAnswer
	} else {
		frags := make([]string, len(hits))
		heads := make([]string, len(hits))
		for i, h := range hits {
			frags[i], heads[i] = clean.Text(h.ChunkText), h.Heading
		}
		raw := ""
		if s.opt.Chat != nil {
			prompt := make([]string, len(hits))
			for i, h := range hits {
				prompt[i] = answerText(h)
			}
			raw, err = s.opt.Chat.Chat(ctx, s.opt.AskModel, llm.Prompt(p.Query, prompt))
			if err != nil {
				s.log.Warn("kb: ask model failed; extractive answer", "err", err)
				raw = ""
			} else {
				ans.Model = s.opt.AskModel
			}
		}
		if raw == "" {
			raw = extract.Extractive{Headings: heads}.Answer(p.Query, frags)
			ans.Model = "extractive"
		}
		raw = engine.NormalizeCitations(raw, len(hits))
		text, cited := llm.CheckCitations(raw, len(hits))
		ans.Answer = text
		for _, n := range cited {
			ans.Citations = append(ans.Citations, citationOf(n, hits[n-1]))
		}
		ans.Cited = len(cited) > 0
	}
	return ans, nil
}

// holdingKind keeps the hits that hold the kind of answer the question asks for when that kind is
// a number (an amount, a duration, a size, a count): a passage about the right thing without any
// such number cannot answer "how much" or "how long". Other questions keep every hit.
func holdingKind(question string, hits []Hit) []Hit {
	k := extract.KindOf(question)
	switch k {
	case extract.KindAmount, extract.KindDuration, extract.KindSize, extract.KindCount:
	default:
		return hits
	}
	if k == extract.KindAmount || k == extract.KindCount {
		k = extract.KindNumber // "how much weight" is 0.35, not a price: any number will do
	}
	out := hits[:0:0]
	for _, h := range hits {
		if extract.Holds(clean.Text(h.ChunkText), k) {
			out = append(out, h)
		}
	}
	return out
}

// Context is the chatflow tool's view of a search: the numbered fragments as one text, and their
// citations.
func (s *Service) Context(ctx context.Context, p SearchParams) (string, []Citation, []Hit, error) {
	hits, err := s.Search(ctx, p)
	if err != nil {
		return "", nil, nil, err
	}
	var b strings.Builder
	cits := make([]Citation, 0, len(hits))
	for i, h := range hits {
		fmt.Fprintf(&b, "[#%d] (%s / %s)\n%s\n\n", i+1, h.SourceName, h.DocumentTitle, h.ChunkText)
		cits = append(cits, citationOf(i+1, h))
	}
	return strings.TrimSpace(b.String()), cits, hits, nil
}
