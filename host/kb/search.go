// Search: the hybrid search (the keyword leg and the vector leg's candidates, from pgvector or
// the in-memory scan, ranked by host/kb/rank), its filters, rerank and log.

package kb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/kb/embed"
	"github.com/reelforge/reelforge/host/kb/llm"
	"github.com/reelforge/reelforge/host/kb/rank"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/internal/segment"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// SearchParams is one search.
type SearchParams struct {
	UserID      string
	Admin       bool
	ProjectID   string // checked by the caller
	Query       string
	TopK        int
	SourceNames []string
	DocumentIDs []string
	Metadata    map[string]string
	Log         bool // write a knowledge_queries row (mode search)
}

// Scores of a hit.
type Scores struct {
	Vector  float64 `json:"vector"`
	Keyword float64 `json:"keyword"`
	Total   float64 `json:"total"`
}

// Hit is one search result.
type Hit struct {
	ChunkID       string `json:"chunk_id"`
	ChunkText     string `json:"chunk_text"`
	Heading       string `json:"heading"`
	SourceName    string `json:"source_name"`
	SourceID      string `json:"source_id"`
	DocumentID    string `json:"document_id"`
	DocumentTitle string `json:"document_title"`
	ChunkIndex    int    `json:"chunk_index"`
	Scores        Scores `json:"scores"`

	meta json.RawMessage // the chunk's metadata, for the metadata filter
}

// Validate checks the query and top_k, defaulting top_k to 5.
func (p *SearchParams) Validate() error {
	if strings.TrimSpace(p.Query) == "" {
		return errcode.Invalid("query", "is required")
	}
	if utf8.RuneCountInString(p.Query) > MaxQueryLen {
		return errcode.Invalid("query", fmt.Sprintf("must be at most %d characters", MaxQueryLen))
	}
	if p.TopK == 0 {
		p.TopK = DefaultTopK
	}
	if p.TopK < 1 || p.TopK > MaxTopK {
		return errcode.Invalid("top_k", fmt.Sprintf("must be between 1 and %d", MaxTopK))
	}
	return nil
}

// Search runs SPEC.md rules 3 to 6 for the caller: the readable sources (in SQL), the query
// embedded, then the pgvector ranking or the in-memory hybrid over keyword candidates plus vector
// neighbours, the relevance floor, the filters and the optional rerank.
func (s *Service) Search(ctx context.Context, p SearchParams) ([]Hit, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	start := time.Now()
	hits, err := s.search(ctx, p)
	if err != nil {
		return nil, err
	}
	if p.Log {
		results, _ := json.Marshal(summarize(hits)) // strings and numbers: always encodes
		q := &store.KnowledgeQuery{ID: uuid.NewString(), UserID: p.UserID, ProjectID: p.ProjectID, Mode: store.QuerySearch,
			QueryText: p.Query, TopK: p.TopK, LatencyMS: ms(time.Since(start)), Results: results, Cited: len(hits) > 0}
		if err := s.st.LogQuery(context.WithoutCancel(ctx), q); err != nil {
			s.log.Warn("kb: log search", "err", err)
		}
	}
	return hits, nil
}

// SearchFor is the entry point of the run engines (engine.Host.Search): a search with the
// visibility of userID (an admin when role is admin), optionally narrowed to a project the caller
// has already checked.
func (s *Service) SearchFor(ctx context.Context, userID, role, projectID, query string, topK int) ([]Hit, error) {
	return s.Search(ctx, SearchParams{UserID: userID, Admin: role == store.RoleAdmin, ProjectID: projectID, Query: query, TopK: topK})
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func (s *Service) search(ctx context.Context, p SearchParams) ([]Hit, error) {
	if len(segment.Informative(p.Query)) == 0 {
		// Only stop and question words and single letters ("what is it?", "这是什么？", "Q"): nothing to find.
		return []Hit{}, nil
	}
	viewer := store.Viewer{UserID: p.UserID, Admin: p.Admin, ProjectID: p.ProjectID, SourceNames: p.SourceNames, DocumentIDs: p.DocumentIDs}
	terms := segment.Query(p.Query)
	var qv []float32
	if s.opt.KeywordOnly {
		// No vector leg: BM25 alone.
	} else if vs, err := s.emb.Embed(ctx, []string{p.Query}); err != nil {
		s.log.Warn("kb: embed query; keyword leg only", "err", err)
	} else if len(vs) == 1 {
		qv = vs[0]
	}
	want := p.TopK
	if len(p.Metadata) > 0 {
		want = max(want*5, 50)
	}
	if s.opt.RerankOn && s.opt.Chat != nil {
		want = max(want, min(2*p.TopK, MaxTopK))
	}
	hits, err := s.rank(ctx, viewer, terms, qv, want)
	if err != nil {
		return nil, err
	}
	return s.finish(ctx, p, hits), nil
}

func hitOf(r store.ChunkRow, sc Scores) Hit {
	return Hit{ChunkID: r.ID, ChunkText: r.Text, Heading: r.Heading, SourceName: r.SourceName, SourceID: r.SourceID,
		DocumentID: r.DocumentID, DocumentTitle: r.DocumentTitle, ChunkIndex: r.Index, Scores: sc, meta: r.Metadata}
}

// rank is the search of every path, DESIGN.md's candidate rule under host/kb/rank's ranking:
// the keyword leg's best matches (by BM25 with the whole index's statistics, see bestByBM25) and
// the vector leg's nearest neighbours, with each candidate's cosine. The paths differ only in
// where the vector leg runs: the database's vector index (pgvector) or a scan of the readable
// vectors in memory (SQLite, PostgreSQL without pgvector, KB_VECTOR_SEARCH=off). The ranking,
// its statistics and its weights are the same, so is the top 10 (up to the index's recall).
func (s *Service) rank(ctx context.Context, v store.Viewer, terms []string, qv []float32, want int) ([]Hit, error) {
	n := s.opt.Candidates
	semantic := embed.Semantic(s.emb)
	// A store's vector index finds the nearest chunks without the keyword leg's rows: that scan
	// runs beside the keyword leg (two statements on two connections, so two cores of the
	// database), and the cosines of keyword rows it did not return are read after both.
	var indexed chan nearResult
	if len(qv) > 0 && s.st.SupportsVectorSearch() {
		indexed = make(chan nearResult, 1)
		go func() {
			got, err := s.st.VectorCandidates(ctx, store.SearchParams{Viewer: v, Terms: terms, Vector: qv, Model: s.emb.Model(), Limit: n})
			indexed <- nearResult{got, err}
		}()
	}
	// Without a semantic embedder the cosine of a keyword row that holds a query term neither
	// admits nor places it (rank.Score keeps BM25's order): only the reported scores of the hits
	// read it. So on the indexed path the keyword leg computes no cosines (about 2.4 of its 11 ms
	// of server CPU at 100k chunks, for its 2n rows), and those of the hits are read after ranking
	// (lateCosines). A semantic embedder's fusion needs every candidate's cosine to rank.
	late := indexed != nil && !semantic
	kwVec := qv
	if late {
		kwVec = nil
	}
	kw, err := s.st.KeywordCandidates(ctx, store.SearchParams{Viewer: v, Terms: terms, Vector: kwVec, Model: s.emb.Model(), Limit: 2 * n})
	if err != nil {
		if indexed != nil {
			<-indexed
		}
		return nil, fmt.Errorf("kb: keyword candidates: %w", err)
	}
	stats, err := s.st.TermStats(ctx, terms)
	if err != nil {
		if indexed != nil {
			<-indexed
		}
		return nil, fmt.Errorf("kb: term statistics: %w", err)
	}
	kw, matched := bestByBM25(terms, kw, n, stats)
	rows := make(map[string]store.ChunkRow, len(kw)+n)
	order := make([]string, 0, len(kw)+n)
	for _, r := range kw {
		rows[r.ID] = r
		order = append(order, r.ID)
	}
	var unranked map[string]bool // keyword rows whose cosine ranking does not read
	if late {
		unranked = make(map[string]bool, matched)
		for _, r := range kw[:matched] {
			unranked[r.ID] = true
		}
	}
	cos := map[string]float64{}
	if len(qv) > 0 {
		var scan *nearResult
		if indexed != nil {
			r := <-indexed
			scan = &r
			if errors.Is(r.err, store.ErrNotSupported) {
				// The store has no index path for this query (pgstore: a vector of other
				// dimensions): vectorLeg's in-memory scan reads every candidate's cosine that
				// exists, and none is left to read late (the index path's, which would fail).
				unranked = nil
			}
		}
		if err := s.vectorLeg(ctx, v, qv, n, scan, rows, &order, cos, unranked); err != nil {
			return nil, err
		}
	}
	cands := make([]rank.Candidate, 0, len(order))
	for _, id := range order {
		r, ok := rows[id]
		if !ok {
			continue
		}
		cands = append(cands, candidate(r, cos[id]))
	}
	scored := rank.Score(terms, cands, rank.Options{TopK: want, Floor: s.opt.MinScore, Stats: rankStats(stats), Semantic: semantic})
	ids := make([]string, len(scored))
	var need []string // hits whose cosine vectorLeg left out
	for i, h := range scored {
		ids[i] = h.ID
		if _, ok := cos[h.ID]; unranked[h.ID] && !ok {
			need = append(need, h.ID)
		}
	}
	if len(need) == 0 {
		err = s.complete(ctx, rows, ids)
	} else {
		// The hits' rows and their missing cosines, on two connections at once, then the hits'
		// scores with those cosines: their order stays (rank.Rescore).
		lateDone := make(chan error, 1)
		go func() { lateDone <- s.lateCosines(ctx, v, qv, need, cos) }()
		err = s.complete(ctx, rows, ids)
		if lerr := <-lateDone; err == nil {
			err = lerr
		}
		if err == nil {
			// A hit deleted since the keyword leg read it (its row still partial) is dropped
			// below, and its cosine was not found: left in the order with 0, its total would cap
			// those of the hits after it (a next hit's vector score of 0.77 was reported as 0).
			// The hits kept are capped by one another alone.
			kept := scored[:0]
			for _, h := range scored {
				if !rows[h.ID].Partial {
					cands[h.Index].Cosine = cos[h.ID]
					kept = append(kept, h)
				}
			}
			scored = kept
			rank.Rescore(scored, cands)
		}
	}
	if err != nil {
		return nil, err
	}
	hits := make([]Hit, 0, len(scored))
	for _, h := range scored {
		if r := rows[h.ID]; !r.Partial { // still partial: deleted since the legs read it
			hits = append(hits, hitOf(r, Scores{Vector: h.Vector, Keyword: h.Keyword, Total: h.Total}))
		}
	}
	return hits, nil
}

// lateCosines reads the cosines with qv of the chunks ids (hits that vectorLeg left without one)
// into cos, through the store's vector index's path (a chunk without an embedding of the model
// gets none: 0, as vectorLeg gives it).
func (s *Service) lateCosines(ctx context.Context, v store.Viewer, qv []float32, ids []string, cos map[string]float64) error {
	got, err := s.st.VectorCandidates(ctx, store.SearchParams{Viewer: v, Vector: qv, Model: s.emb.Model(), Limit: 0, ChunkIDs: ids})
	if err != nil {
		return fmt.Errorf("kb: hits' cosines: %w", err)
	}
	for _, r := range got {
		cos[r.ID] = r.Vector
	}
	return nil
}

// complete replaces the rows of ids that a store returned partial (store.ChunkRow.Partial) with
// whole ones, read in one call: only the hits need their text and names.
func (s *Service) complete(ctx context.Context, rows map[string]store.ChunkRow, ids []string) error {
	var partial []string
	for _, id := range ids {
		if rows[id].Partial {
			partial = append(partial, id)
		}
	}
	return s.load(ctx, rows, partial, "hits")
}

// load reads the whole rows of ids (what: the error's word for them) into rows, in one call.
func (s *Service) load(ctx context.Context, rows map[string]store.ChunkRow, ids []string, what string) error {
	if len(ids) == 0 {
		return nil
	}
	got, err := s.st.ChunksByID(ctx, ids)
	if err != nil {
		return fmt.Errorf("kb: load %s: %w", what, err)
	}
	for _, r := range got {
		rows[r.ID] = r
	}
	return nil
}

// nearResult is a store's vector index scan: the nearest chunks with their cosines.
type nearResult struct {
	rows []store.ChunkRow
	err  error
}

// vectorLeg adds the n readable chunks nearest to qv to rows and order, and the cosine with qv of
// every candidate (those already in rows too) to cos: through the store's vector index when it
// has one (scan: its nearest chunks, found beside the keyword leg; the cosines of the rows already
// in rows that it did not return come with them from the keyword leg, or are read here, except
// those of unranked, which ranking does not read), otherwise by the in-memory scan.
func (s *Service) vectorLeg(ctx context.Context, v store.Viewer, qv []float32, n int, scan *nearResult, rows map[string]store.ChunkRow, order *[]string, cos map[string]float64, unranked map[string]bool) error {
	known := append([]string(nil), *order...)
	if scan != nil && !errors.Is(scan.err, store.ErrNotSupported) {
		if scan.err != nil {
			return fmt.Errorf("kb: vector candidates: %w", scan.err)
		}
		for _, r := range scan.rows {
			cos[r.ID] = r.Vector
			if _, ok := rows[r.ID]; !ok {
				rows[r.ID] = r
				*order = append(*order, r.ID)
			}
		}
		var rest []string
		for _, id := range known {
			if _, ok := cos[id]; ok {
				continue
			}
			if r := rows[id]; r.HasVector { // the keyword leg read it (store.SearchParams.Vector)
				cos[id] = r.Vector
				continue
			}
			if unranked[id] {
				continue
			}
			rest = append(rest, id)
		}
		if len(rest) == 0 {
			return nil
		}
		got, err := s.st.VectorCandidates(ctx, store.SearchParams{Viewer: v, Vector: qv, Model: s.emb.Model(), Limit: 0, ChunkIDs: rest})
		if err != nil {
			return fmt.Errorf("kb: vector candidates: %w", err)
		}
		for _, r := range got {
			cos[r.ID] = r.Vector
		}
		return nil
	}
	near, vecs, err := s.neighbours(ctx, v, qv, n, known)
	if err != nil {
		return err
	}
	for id, vec := range vecs {
		cos[id] = rank.Cosine(qv, vec)
	}
	var missing []string
	for _, id := range near {
		if _, ok := rows[id]; !ok {
			missing = append(missing, id)
			*order = append(*order, id)
		}
	}
	return s.load(ctx, rows, missing, "candidates")
}

// rankStats are a store's term statistics as rank's BM25 takes them.
func rankStats(st store.TermStats) rank.Stats {
	return rank.Stats{Docs: st.Docs, AvgLen: st.AvgLen, DF: func(t string) int { return st.DF[t] }}
}

// bestByBM25 keeps the n best of rows (a store's keyword matches, twice as many as wanted) by
// rank's BM25 with the whole index's statistics, best first, ties to the lower id. The store's
// own full-text rank only picks the rows to look at. Both give common terms no say: FTS5's bm25
// gives a term held by half the chunks or more no weight, pgstore's keyword leg leaves such terms
// out past its row budget, and both search only a query's rarer terms once they match many rows.
// So their best 100 leave out chunks that a query's common terms (single Chinese characters, say)
// put among BM25's best: on drcd, 13 of 100 candidates differed on SQLite, and MRR@10 fell below
// BM25's own (BENCHMARKS.md, ninth session). With twice the rows to choose from, the choice is
// BM25's, and the same on every driver. matched counts the rows kept that hold a query term (BM25
// above 0, whatever the candidate set: every idf is), the first ones.
func bestByBM25(terms []string, rows []store.ChunkRow, n int, stats store.TermStats) (kept []store.ChunkRow, matched int) {
	cands := make([]rank.Candidate, len(rows))
	for i, r := range rows {
		cands[i] = candidate(r, 0)
	}
	score := rank.BM25(terms, cands, rank.Options{Stats: rankStats(stats)})
	order := make([]int, len(rows))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool {
		x, y := order[a], order[b]
		if score[x] != score[y] {
			return score[x] > score[y]
		}
		return rows[x].ID < rows[y].ID
	})
	kept = make([]store.ChunkRow, 0, min(n, len(rows)))
	for _, i := range order[:min(n, len(rows))] {
		kept = append(kept, rows[i])
		if score[i] > 0 {
			matched++
		}
	}
	return kept, matched
}

// candidate is row as rank scores it: its stored search text (segment.IndexForm), which rank
// reads without splitting it (rank.Candidate.Text), or the query terms' frequencies in it that
// the store counted (store.ChunkRow.TermFreq), and cos, its cosine with the query.
func candidate(r store.ChunkRow, cos float64) rank.Candidate {
	if r.TermFreq != nil {
		return rank.Candidate{ID: r.ID, Len: r.TermCount, Counts: r.TermFreq, Cosine: cos}
	}
	return rank.Candidate{ID: r.ID, Text: r.SearchText, Cosine: cos}
}

// finish applies the metadata filter, the optional rerank and top_k.
func (s *Service) finish(ctx context.Context, p SearchParams, hits []Hit) []Hit {
	if len(p.Metadata) > 0 {
		kept := hits[:0]
		for _, h := range hits {
			if metaMatches(h.meta, p.Metadata) {
				kept = append(kept, h)
			}
		}
		hits = kept
	}
	if s.opt.RerankOn && s.opt.Chat != nil && len(hits) > 1 {
		docs := make([]string, len(hits))
		for i, h := range hits {
			docs[i] = h.ChunkText
		}
		order, err := llm.Rerank(ctx, s.opt.Chat, s.opt.RerankModel, p.Query, docs, s.opt.RerankTimeout)
		if err != nil {
			s.log.Warn("kb: rerank failed; hybrid order kept", "err", err)
		} else {
			re := make([]Hit, 0, len(hits))
			for _, i := range order {
				re = append(re, hits[i])
			}
			hits = re
		}
	}
	if len(hits) > p.TopK {
		hits = hits[:p.TopK]
	}
	for i := range hits {
		hits[i].Scores = Scores{Vector: round4(hits[i].Scores.Vector), Keyword: round4(hits[i].Scores.Keyword), Total: round4(hits[i].Scores.Total)}
	}
	if hits == nil {
		hits = []Hit{}
	}
	return hits
}

func round4(x float64) float64 {
	const f = 10000
	if x < 0 {
		return -float64(int64(-x*f+0.5)) / f
	}
	return float64(int64(x*f+0.5)) / f
}

func metaMatches(raw json.RawMessage, want map[string]string) bool {
	var m map[string]any
	if len(raw) == 0 || json.Unmarshal(raw, &m) != nil {
		return false
	}
	for k, v := range want {
		got, ok := m[k]
		if !ok {
			return false
		}
		if s, isStr := got.(string); isStr {
			if s != v {
				return false
			}
		} else if b, _ := json.Marshal(got); string(b) != v {
			return false
		}
	}
	return true
}

type hitSummary struct {
	ChunkID    string  `json:"chunk_id"`
	DocumentID string  `json:"document_id"`
	SourceName string  `json:"source_name"`
	Total      float64 `json:"total"`
}

func summarize(hits []Hit) []hitSummary {
	out := make([]hitSummary, len(hits))
	for i, h := range hits {
		out[i] = hitSummary{h.ChunkID, h.DocumentID, h.SourceName, h.Scores.Total}
	}
	return out
}
