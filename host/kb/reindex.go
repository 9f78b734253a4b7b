// Reindex: re-embedding a source's chunks with the current embedder, switching at the end.

package kb

import (
	"context"
	"errors"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/sdk/errcode"
)

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
		page, err := s.st.SourceChunks(ctx, store.SourceChunksParams{SourceID: sourceID, AfterID: after, Limit: reindexBatch})
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
