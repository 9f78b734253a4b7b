package kb

import (
	"context"
	"strings"

	"github.com/reelforge/reelforge/host/kb/clean"
	"github.com/reelforge/reelforge/host/store"
)

// SearchForContent is the knowledge search of generated content (workflow runs: scripts, speech,
// captions). It is SearchFor with two differences: hits of internal sources (KnowledgeSource.Internal)
// are left out, since those answer questions but are never narrated or quoted, and each hit's
// text is cleaned to plain sentences (clean.Text), so no heading, list or table syntax is read out.
func (s *Service) SearchForContent(ctx context.Context, userID, role, projectID, query string, topK int) ([]Hit, error) {
	hits, err := s.Search(ctx, SearchParams{UserID: userID, Admin: role == store.RoleAdmin, ProjectID: projectID,
		Query: query, TopK: min(2*max(topK, 1), MaxTopK)})
	if err != nil {
		return nil, err
	}
	internal := map[string]bool{}
	out := hits[:0]
	for _, h := range hits {
		in, known := internal[h.SourceID]
		if !known {
			src, err := s.st.GetSource(ctx, h.SourceID)
			if err != nil {
				return nil, err
			}
			in = src.Internal()
			internal[h.SourceID] = in
		}
		if in {
			continue
		}
		if h.ChunkText = clean.Text(h.ChunkText); strings.TrimSpace(h.ChunkText) == "" {
			continue
		}
		out = append(out, h)
		if len(out) == topK {
			break
		}
	}
	return out, nil
}
