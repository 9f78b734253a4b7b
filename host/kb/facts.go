// Facts: a user's stored key/value facts.

package kb

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/sdk/errcode"
)

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

// DeleteFact removes the caller's fact named by its id or key; 404 when there is none.
func (s *Service) DeleteFact(ctx context.Context, userID, idOrKey string) error {
	err := s.st.DeleteFact(ctx, userID, idOrKey)
	if errors.Is(err, store.ErrNotFound) {
		return errcode.New(errcode.NotFound, "Fact not found")
	}
	return err
}
