package app

import (
	"context"
	"log/slog"

	"github.com/reelforge/reelforge/host/config"
	"github.com/reelforge/reelforge/host/kb"
	"github.com/reelforge/reelforge/host/store"
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

// NewFileIngester builds the knowledge ingester of `reelforge kb ingest` over st: the same
// knowledge service (embedder, chunking, de-duplication by hash per source) the API uses.
func NewFileIngester(ctx context.Context, cfg *config.Config, st store.Driver, log *slog.Logger) (FileIngester, error) {
	return kbIngester{newKB(cfg, st, log, "")}, nil // no holder: a killed command's document is freed by store.IngestStale
}

type kbIngester struct{ kb *kb.Service }

// IngestFile implements FileIngester.
func (k kbIngester) IngestFile(ctx context.Context, f IngestFile) (*IngestedFile, error) {
	res, err := k.kb.Ingest(ctx, kb.IngestParams{UserID: f.UserID, ProjectID: f.ProjectID, SourceName: f.Source,
		Visibility: f.Visibility, Filename: f.Name, Data: f.Data, IsFile: true})
	if err != nil {
		return nil, err
	}
	return &IngestedFile{Chunks: res.ChunksCount, Duplicate: res.Duplicate, Status: res.Document.ParseStatus,
		Reason: res.Document.ErrorMessage}, nil
}
