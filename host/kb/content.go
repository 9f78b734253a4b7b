// The searches of generated content and of chat answers: SearchFor with their own rules.

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

// SearchForAnswer is the knowledge search of a chat answer: the hits (and stored facts) that
// ground an answer to question, by the rule of Ask (basis), so a chat without a citable basis
// says so instead of quoting a passage that only shares words with the question.
func (s *Service) SearchForAnswer(ctx context.Context, userID, role, projectID, question string, topK int) ([]Hit, error) {
	hits, err := s.SearchFor(ctx, userID, role, projectID, question, topK)
	if err != nil {
		return nil, err
	}
	if hits, err = s.basis(ctx, userID, question, hits); err != nil {
		return nil, err
	}
	return holdingKind(question, hits), nil
}
