package kb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	"github.com/reelforge/reelforge/host/kb/clean"
	"github.com/reelforge/reelforge/host/kb/llm"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
	kbdemo "github.com/reelforge/reelforge/testdata/kb-demo"
)

// NoBasisAnswer is the answer of an ask without hits (SPEC.md rule 7).
const NoBasisAnswer = "No citable basis was found in the knowledge base for this question, so any answer would be uncertain. " +
	"知识库中没有找到可引用的依据，答案不确定。"

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
			raw = llm.Extractive{Headings: heads}.Answer(p.Query, frags)
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
	k := llm.KindOf(question)
	switch k {
	case llm.KindAmount, llm.KindDuration, llm.KindSize, llm.KindCount:
	default:
		return hits
	}
	if k == llm.KindAmount || k == llm.KindCount {
		k = llm.KindNumber // "how much weight" is 0.35, not a price: any number will do
	}
	out := hits[:0:0]
	for _, h := range hits {
		if llm.Holds(clean.Text(h.ChunkText), k) {
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

// Feedback stores the rating (1 to 5) and notes of the caller's query; another user's or an
// unknown query is NOT_FOUND.
func (s *Service) Feedback(ctx context.Context, userID, queryID string, rating int, notes string) (*store.KnowledgeQuery, error) {
	if rating < 1 || rating > 5 {
		return nil, errcode.Invalid("rating", "must be a whole number from 1 to 5")
	}
	if len([]rune(notes)) > MaxNotesLen {
		return nil, errcode.Invalid("notes", fmt.Sprintf("must be at most %d characters", MaxNotesLen))
	}
	q, err := s.st.GetQuery(ctx, queryID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && q.UserID != userID) {
		return nil, errcode.New(errcode.NotFound, "Query not found")
	}
	if err != nil {
		return nil, err
	}
	if err := s.st.SetFeedback(ctx, queryID, rating, notes); err != nil {
		return nil, err
	}
	q.FeedbackRating, q.FeedbackNotes = &rating, notes
	return q, nil
}

// MetricsWindow is the number of recent searches and asks the metrics cover.
const MetricsWindow = 200

// Metrics are the figures of GET /api/knowledge/metrics.
type Metrics struct {
	Totals      map[string]int     `json:"totals"`
	Quality     map[string]any     `json:"quality"`
	Performance map[string]float64 `json:"performance"`
}

// Metrics sums the caller's queries (everyone's for an admin).
func (s *Service) Metrics(ctx context.Context, userID string, admin bool) (*Metrics, error) {
	who := userID
	if admin {
		who = ""
	}
	st, err := s.st.QueryStats(ctx, who, MetricsWindow)
	if err != nil {
		return nil, err
	}
	coverage := 0.0
	if st.RecentAsks > 0 {
		coverage = math.Round(1000*float64(st.RecentCited)/float64(st.RecentAsks)) / 10
	}
	var avg any
	if st.FeedbackCount > 0 {
		avg = math.Round(100*float64(st.RatingSum)/float64(st.FeedbackCount)) / 100
	}
	return &Metrics{
		Totals: map[string]int{"ask": st.Asks, "search": st.Searches, "queries": st.Asks + st.Searches},
		Quality: map[string]any{"citation_coverage_pct_recent_200": coverage, "avg_rating": avg,
			"feedback_count": st.FeedbackCount, "recent_asks": st.RecentAsks, "recent_cited": st.RecentCited},
		Performance: map[string]float64{
			"search_p50_ms": pct(st.SearchLatencies, 50), "search_p95_ms": pct(st.SearchLatencies, 95),
			"ask_p50_ms": pct(st.AskLatencies, 50), "ask_p95_ms": pct(st.AskLatencies, 95), "window": MetricsWindow},
	}, nil
}

// pct is the nearest-rank percentile of xs (0 when empty), rounded to 0.1 ms.
func pct(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	i = max(0, min(i, len(s)-1))
	return math.Round(s[i]*10) / 10
}

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

// Field limits of facts.
const (
	MaxFactKeyLen   = 200
	MaxFactValueLen = 10000
)

// PutFact stores (replaces) one of the caller's facts.
func (s *Service) PutFact(ctx context.Context, userID, key, value string) (*store.Fact, error) {
	f := &store.Fact{ID: uuid.NewString(), UserID: userID, Key: key, Value: value}
	if err := s.st.PutFact(ctx, f); err != nil {
		return nil, err
	}
	return f, nil
}

// Facts lists the caller's facts.
func (s *Service) Facts(ctx context.Context, userID string) ([]store.Fact, error) {
	return s.st.ListFacts(ctx, userID)
}

// ReindexResult is the answer of POST /api/knowledge/reindex.
type ReindexResult struct {
	SourceID string `json:"source_id"`
	Model    string `json:"model"`
	Chunks   int    `json:"chunks"`
}

// Reindex re-embeds every chunk of the caller's source with the current embedder: the new vectors
// are written beside the old ones, and the chunks switch to them at the end, so searches keep
// working throughout. Another user's source (or an unknown one) is NOT_FOUND.
func (s *Service) Reindex(ctx context.Context, userID string, admin bool, sourceID string) (*ReindexResult, error) {
	src, err := s.st.GetSource(ctx, sourceID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && src.CreatedBy != userID && !admin) {
		return nil, errcode.New(errcode.NotFound, "Source not found")
	}
	if err != nil {
		return nil, err
	}
	model := s.emb.Model()
	// A page of chunks at a time, each re-embedded and written in its own transaction: a large
	// source is never held in memory or in one transaction (SQLite's single writer would make
	// every other write wait for all of it). A page replaces any vectors of the model a failed
	// reindex left, so running it again is safe; searches use the old vectors until the switch.
	total, after := 0, ""
	for {
		page, err := s.st.SourceChunks(ctx, sourceID, after, reindexBatch)
		if err != nil {
			return nil, err
		}
		if len(page) == 0 {
			break
		}
		texts := make([]string, len(page))
		ids := make([]string, len(page))
		for i, c := range page {
			ids[i], texts[i] = c.ID, withHeading(c.Text, c.Heading)
		}
		vecs, err := s.embedAll(ctx, texts)
		if err != nil {
			return nil, err
		}
		byID := make(map[string][]float32, len(page))
		for i, id := range ids {
			byID[id] = vecs[i]
		}
		if err := s.st.AddEmbeddings(ctx, model, byID); err != nil {
			return nil, err
		}
		s.remember(model, ids, vecs)
		total += len(page)
		after = ids[len(ids)-1]
	}
	err = s.st.SwitchEmbeddings(ctx, sourceID, model)
	s.changed()
	if err != nil {
		return nil, err
	}
	return &ReindexResult{SourceID: sourceID, Model: model, Chunks: total}, nil
}
