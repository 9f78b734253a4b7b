// The eval: the 40-question set over testdata/kb-demo searched (and optionally answered) and
// scored.

package kb

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	"github.com/reelforge/reelforge/sdk/errcode"
	kbdemo "github.com/reelforge/reelforge/testdata/kb-demo"
)

// EvalItem is one question of the eval set.
type EvalItem struct {
	ID             string `json:"id"`
	Scenario       string `json:"scenario"`
	Question       string `json:"question"`
	ExpectedAnswer string `json:"expected_answer"`
	Doc            string `json:"doc,omitempty"`
}

// EvalScenario is one scenario class.
type EvalScenario struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
}

// EvalSet is the 40-question set over testdata/kb-demo, and questions outside its domain that
// an ask must answer with NoBasisAnswer.
type EvalSet struct {
	Scenarios   []EvalScenario `json:"scenarios"`
	Items       []EvalItem     `json:"items"`
	OutOfDomain []EvalItem     `json:"out_of_domain"`
}

// LoadEvalSet returns the embedded eval set.
func LoadEvalSet() (*EvalSet, error) {
	var es EvalSet
	if err := json.Unmarshal(kbdemo.EvalJSON, &es); err != nil {
		return nil, fmt.Errorf("kb: eval set: %w", err)
	}
	return &es, nil
}

// EvalParams is the body of eval/run-search.
type EvalParams struct {
	UserID     string
	Admin      bool
	TopK       int
	Scenario   string
	SourceName string
	Answers    bool // also answer every question (as Ask, without the log) and score the answers
}

// EvalItemResult is one question's outcome.
type EvalItemResult struct {
	ID        string  `json:"id"`
	Scenario  string  `json:"scenario"`
	Hit       bool    `json:"hit"`
	Rank      int     `json:"rank"` // 1-based position of the first hit holding the answer, 0 when none
	LatencyMS float64 `json:"latency_ms"`
	// With EvalParams.Answers: whether the answer holds the expected answer, and the answer.
	AnswerCorrect *bool  `json:"answer_correct,omitempty"`
	Answer        string `json:"answer,omitempty"`
}

// AnswerScore sums the answers of an eval run: Correct of Total hold the expected answer (the
// target is AnswerTarget of the 40).
type AnswerScore struct {
	Correct int     `json:"correct"`
	Total   int     `json:"total"`
	Rate    float64 `json:"rate"`
	Target  int     `json:"target"`
}

// OutOfDomainScore sums the out-of-domain questions: NotFound of Total answered NoBasisAnswer
// without citations; Misses are the ids of the others.
type OutOfDomainScore struct {
	NotFound int      `json:"not_found"`
	Total    int      `json:"total"`
	Misses   []string `json:"misses"`
}

// AnswerTarget is how many of the 40 eval answers must hold the expected answer.
const AnswerTarget = 36

// ScenarioResult sums one scenario.
type ScenarioResult struct {
	Total   int     `json:"total"`
	Hits    int     `json:"hits"`
	HitRate float64 `json:"hit_rate"`
}

// EvalResult is the answer of eval/run-search.
type EvalResult struct {
	Total      int                       `json:"total"`
	Hits       int                       `json:"hits"`
	HitRate    float64                   `json:"hit_rate"`
	MRR        float64                   `json:"mrr"`
	P95MS      float64                   `json:"p95_ms"`
	TopK       int                       `json:"top_k"`
	ByScenario map[string]ScenarioResult `json:"by_scenario"`
	Items      []EvalItemResult          `json:"items"`
	// With EvalParams.Answers.
	Answers     *AnswerScore      `json:"answers,omitempty"`
	OutOfDomain *OutOfDomainScore `json:"out_of_domain,omitempty"`
}

// EvalNormalize is the comparison form of DECISIONS.md: NFKC, case folding, no whitespace.
func EvalNormalize(s string) string {
	s = cases.Fold().String(norm.NFKC.String(s))
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
}

// RunEval searches every question (of one scenario, when given) in the caller's visible corpus,
// without a language model, and scores whether a top_k hit holds the expected answer.
func (s *Service) RunEval(ctx context.Context, p EvalParams) (*EvalResult, error) {
	es, err := LoadEvalSet()
	if err != nil {
		return nil, err
	}
	if p.TopK == 0 {
		p.TopK = DefaultTopK
	}
	if p.TopK < 1 || p.TopK > MaxTopK {
		return nil, errcode.Invalid("top_k", fmt.Sprintf("must be between 1 and %d", MaxTopK))
	}
	known := map[string]bool{}
	for _, sc := range es.Scenarios {
		known[sc.ID] = true
	}
	if p.Scenario != "" && !known[p.Scenario] {
		return nil, errcode.Invalid("scenario", "is not a scenario of the eval set")
	}
	res := &EvalResult{TopK: p.TopK, ByScenario: map[string]ScenarioResult{}, Items: []EvalItemResult{}}
	var names []string
	if p.SourceName != "" {
		names = []string{p.SourceName}
	}
	var lat []float64
	for _, it := range es.Items {
		if p.Scenario != "" && it.Scenario != p.Scenario {
			continue
		}
		start := time.Now()
		hits, err := s.Search(ctx, SearchParams{UserID: p.UserID, Admin: p.Admin, Query: it.Question, TopK: p.TopK, SourceNames: names})
		if err != nil {
			return nil, err
		}
		r := EvalItemResult{ID: it.ID, Scenario: it.Scenario, LatencyMS: ms(time.Since(start))}
		want := EvalNormalize(it.ExpectedAnswer)
		for i, h := range hits {
			if strings.Contains(EvalNormalize(h.Heading+"\n"+h.ChunkText), want) {
				r.Hit, r.Rank = true, i+1
				break
			}
		}
		lat = append(lat, r.LatencyMS)
		if p.Answers {
			a, err := s.answer(ctx, SearchParams{UserID: p.UserID, Admin: p.Admin, Query: it.Question, TopK: p.TopK, SourceNames: names})
			if err != nil {
				return nil, err
			}
			ok := strings.Contains(EvalNormalize(a.Answer), want)
			r.AnswerCorrect, r.Answer = &ok, a.Answer
			if res.Answers == nil {
				res.Answers = &AnswerScore{Target: AnswerTarget}
			}
			res.Answers.Total++
			if ok {
				res.Answers.Correct++
			}
		}
		res.Items = append(res.Items, r)
		sc := res.ByScenario[it.Scenario]
		sc.Total++
		res.Total++
		if r.Hit {
			sc.Hits++
			res.Hits++
			res.MRR += 1 / float64(r.Rank)
		}
		res.ByScenario[it.Scenario] = sc
	}
	for name, sc := range res.ByScenario {
		sc.HitRate = math.Round(10000*float64(sc.Hits)/float64(sc.Total)) / 10000
		res.ByScenario[name] = sc
	}
	if res.Total > 0 {
		res.HitRate = math.Round(10000*float64(res.Hits)/float64(res.Total)) / 10000
		res.MRR = math.Round(10000*res.MRR/float64(res.Total)) / 10000
	}
	res.P95MS = pct(lat, 95)
	if p.Answers {
		if res.Answers == nil {
			res.Answers = &AnswerScore{Target: AnswerTarget}
		}
		if res.Answers.Total > 0 {
			res.Answers.Rate = math.Round(10000*float64(res.Answers.Correct)/float64(res.Answers.Total)) / 10000
		}
		ood := &OutOfDomainScore{Misses: []string{}}
		for _, it := range es.OutOfDomain {
			a, err := s.answer(ctx, SearchParams{UserID: p.UserID, Admin: p.Admin, Query: it.Question, TopK: p.TopK, SourceNames: names})
			if err != nil {
				return nil, err
			}
			ood.Total++
			if a.Answer == NoBasisAnswer && len(a.Citations) == 0 {
				ood.NotFound++
			} else {
				ood.Misses = append(ood.Misses, it.ID)
			}
		}
		res.OutOfDomain = ood
	}
	return res, nil
}
