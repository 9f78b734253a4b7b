package pgstore

import (
	"log/slog"
	"time"
)

// StartIndexer starts d's background indexer (d opened with ManualIndexer) with a backlog bound,
// batch size and settle time of the test's choosing; Close stops it.
func StartIndexer(d *Driver, backlog, batch int, settle time.Duration) {
	d.startIndexerWith(slog.New(slog.DiscardHandler), backlog, batch, settle)
}
