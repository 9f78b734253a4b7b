// The query log's read side: feedback on a logged query and the metrics over recent queries.

package kb

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/sdk/errcode"
)

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
	if err := s.st.SetFeedback(ctx, store.FeedbackParams{QueryID: queryID, Rating: rating, Notes: notes}); err != nil {
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
