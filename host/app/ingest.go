package app

import (
	"context"
	"log/slog"

	"github.com/reelforge/reelforge/host/config"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// IngestFile is one file for `reelforge kb ingest`.
type IngestFile struct {
	UserID     string
	ProjectID  string // "" for none
	Source     string // the knowledge source's name
	Visibility string // "" for the knowledge service's default
	Name       string // file name, with its extension (it selects the parser)
	Data       []byte
}

// IngestedFile is the outcome of one IngestFile.
type IngestedFile struct {
	Chunks    int
	Duplicate bool   // the source held the file's hash already; nothing was stored
	Status    string // the document's state: indexed or failed
	Reason    string // why it failed, when it did
}

// FileIngester stores files in a knowledge source.
type FileIngester interface {
	IngestFile(ctx context.Context, f IngestFile) (*IngestedFile, error)
}

// NewFileIngester builds the knowledge ingester of `reelforge kb ingest` over st.
//
// TODO(kb): the knowledge service (host/kb) is not on this branch: once it is, return an adapter
// calling kb.Service.Ingest with IsFile set (see the wiring note of issue 9).
func NewFileIngester(ctx context.Context, cfg *config.Config, st store.Driver, log *slog.Logger) (FileIngester, error) {
	return nil, errcode.New(errcode.ResourceExhausted, "the knowledge service is not built into this binary")
}
