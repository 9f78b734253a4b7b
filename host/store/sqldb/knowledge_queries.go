package sqldb

import (
	"context"

	"github.com/reelforge/reelforge/host/store"
)

const queryCols = `id, user_id, project_id, mode, query_text, top_k, latency_ms, results, answer_text, citations, cited,
	feedback_rating, feedback_notes, created_at`

// LogQuery implements store.Knowledge.
func (db *DB) LogQuery(ctx context.Context, q *store.KnowledgeQuery) error {
	q.CreatedAt = db.Now()
	_, err := db.Exec(ctx, `INSERT INTO knowledge_queries (`+queryCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, NULL, '', $12)`,
		q.ID, q.UserID, q.ProjectID, q.Mode, q.QueryText, q.TopK, q.LatencyMS, JOr(q.Results, "[]"), q.AnswerText,
		JOr(q.Citations, "[]"), q.Cited, db.T(q.CreatedAt))
	return err
}

// GetQuery implements store.Knowledge.
func (db *DB) GetQuery(ctx context.Context, id string) (*store.KnowledgeQuery, error) {
	var q store.KnowledgeQuery
	var rating *int64
	if err := db.QueryRow(ctx, `SELECT `+queryCols+` FROM knowledge_queries WHERE id = $1`, id).Scan(&q.ID, &q.UserID,
		&q.ProjectID, &q.Mode, &q.QueryText, &q.TopK, &q.LatencyMS, JSON(&q.Results), &q.AnswerText, JSON(&q.Citations),
		&q.Cited, &rating, &q.FeedbackNotes, Time(&q.CreatedAt)); err != nil {
		return nil, err
	}
	if rating != nil {
		r := int(*rating)
		q.FeedbackRating = &r
	}
	return &q, nil
}

// SetFeedback implements store.Knowledge.
func (db *DB) SetFeedback(ctx context.Context, p store.FeedbackParams) error {
	n, err := db.Exec(ctx, `UPDATE knowledge_queries SET feedback_rating = $2, feedback_notes = $3 WHERE id = $1`, p.QueryID, p.Rating, p.Notes)
	if err == nil && n == 0 {
		return store.ErrNotFound
	}
	return err
}

// QueryStats implements store.Knowledge.
func (db *DB) QueryStats(ctx context.Context, userID string, window int) (*store.QueryStats, error) {
	var st store.QueryStats
	var a Args
	who := "TRUE"
	if userID != "" {
		who = "user_id = " + a.Add(userID)
	}
	rows, err := db.Query(ctx, `SELECT mode, COUNT(*), COUNT(feedback_rating), COALESCE(SUM(feedback_rating), 0)
		FROM knowledge_queries WHERE `+who+` GROUP BY mode`, a.List...)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var mode string
		var n, fb, sum int64
		if err := rows.Scan(&mode, &n, &fb, &sum); err != nil {
			rows.Close()
			return nil, err
		}
		switch mode {
		case store.QueryAsk:
			st.Asks = int(n)
		case store.QuerySearch:
			st.Searches = int(n)
		}
		st.FeedbackCount += int(fb)
		st.RatingSum += int(sum)
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return nil, err
	}
	for _, mode := range []string{store.QueryAsk, store.QuerySearch} {
		var b Args
		w := "TRUE"
		if userID != "" {
			w = "user_id = " + b.Add(userID)
		}
		m := b.Add(mode)
		rows, err := db.Query(ctx, `SELECT latency_ms, cited FROM knowledge_queries WHERE `+w+` AND mode = `+m+`
			ORDER BY created_at DESC LIMIT `+b.Add(window), b.List...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var lat float64
			var cited bool
			if err := rows.Scan(&lat, &cited); err != nil {
				rows.Close()
				return nil, err
			}
			if mode == store.QueryAsk {
				st.AskLatencies = append(st.AskLatencies, lat)
				st.RecentAsks++
				if cited {
					st.RecentCited++
				}
			} else {
				st.SearchLatencies = append(st.SearchLatencies, lat)
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, err
		}
	}
	return &st, nil
}

// PutFact implements store.Knowledge.
func (db *DB) PutFact(ctx context.Context, f *store.Fact) error {
	now := db.Now()
	if _, err := db.Exec(ctx, `INSERT INTO facts (id, user_id, key, value, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5)
		ON CONFLICT (user_id, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
		f.ID, f.UserID, f.Key, f.Value, db.T(now)); err != nil {
		return err
	}
	return db.QueryRow(ctx, `SELECT id, created_at, updated_at FROM facts WHERE user_id = $1 AND key = $2`, f.UserID, f.Key).
		Scan(&f.ID, Time(&f.CreatedAt), Time(&f.UpdatedAt))
}

// ListFacts implements store.Knowledge.
func (db *DB) ListFacts(ctx context.Context, userID string) ([]store.Fact, error) {
	return queryAll(ctx, db, func(r Row) (*store.Fact, error) {
		var f store.Fact
		return &f, r.Scan(&f.ID, &f.UserID, &f.Key, &f.Value, Time(&f.CreatedAt), Time(&f.UpdatedAt))
	}, `SELECT id, user_id, key, value, created_at, updated_at FROM facts WHERE user_id = $1 ORDER BY key`, userID)
}

// DeleteFact implements store.Knowledge.
func (db *DB) DeleteFact(ctx context.Context, userID, idOrKey string) error {
	n, err := db.Exec(ctx, `DELETE FROM facts WHERE user_id = $1 AND (id = $2 OR key = $2)`, userID, idOrKey)
	if err == nil && n == 0 {
		return store.ErrNotFound
	}
	return err
}
