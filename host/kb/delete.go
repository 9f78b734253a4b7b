// Deleting a document with its chunks, and dropping their vectors from the cache.

package kb

import (
	"context"
	"errors"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// Deleted is the answer of a document's deletion.
type Deleted struct {
	DocumentID    string `json:"document_id"`
	SourceID      string `json:"source_id"`
	Chunks        int    `json:"chunks_deleted"`
	SourceVersion int    `json:"source_version"`
}

// DeleteDocument removes a document of one of the caller's sources (an admin: any) with its
// chunks, vectors and keyword index entries, and raises the source's version; no search path
// finds it afterwards (this service's caches of readable chunks and vectors forget it at once).
// Anyone else's document is 404.
func (s *Service) DeleteDocument(ctx context.Context, userID string, admin bool, id string) (*Deleted, error) {
	notFound := errcode.New(errcode.NotFound, "Document not found")
	doc, err := s.st.GetDocument(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	src, err := s.st.GetSource(ctx, doc.SourceID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && src.CreatedBy != userID && !admin) {
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	ids, err := s.st.DeleteDocument(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	s.forget(ids)
	out := &Deleted{DocumentID: id, SourceID: src.ID, Chunks: len(ids), SourceVersion: src.Version + 1}
	if cur, err := s.st.GetSource(ctx, src.ID); err == nil {
		out.SourceVersion = cur.Version
	}
	return out, nil
}

// forget drops deleted chunks from the decoded vectors and invalidates the readable lists.
func (s *Service) forget(chunkIDs []string) {
	gone := make(map[string]bool, len(chunkIDs))
	for _, id := range chunkIDs {
		gone[id] = true
	}
	s.mu.Lock()
	s.cache.forget(gone)
	s.mu.Unlock()
	s.changed()
}
