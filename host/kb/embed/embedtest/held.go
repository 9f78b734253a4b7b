// Package embedtest holds embedders for tests of what uses an embedder.
package embedtest

import (
	"context"
	"sync"

	"github.com/reelforge/reelforge/host/kb/embed"
)

// Held is the local embedder behind a remote one's face (no token path) whose first Embed call
// closes Started, then holds until Release is closed: an ingest caught mid-way, its documents
// added and not yet written. The held call then answers Fail when set.
type Held struct {
	embed.Embedder
	Started chan struct{}
	Release chan struct{}
	Fail    error
	once    sync.Once
}

// NewHeld returns a Held over the local embedder.
func NewHeld() *Held {
	return &Held{Embedder: embed.NewLocal(), Started: make(chan struct{}), Release: make(chan struct{})}
}

func (h *Held) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	first := false
	h.once.Do(func() { first = true; close(h.Started) })
	if first {
		select {
		case <-h.Release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if h.Fail != nil {
			return nil, h.Fail
		}
	}
	return h.Embedder.Embed(ctx, texts)
}
