package pgstore

import (
	"log/slog"
	"time"
)

// StartIndexer starts d's background indexer (d opened with ManualIndexer) with a backlog bound,
// batch size, settle time and duty of the test's choosing; Close stops it.
func StartIndexer(d *Driver, backlog, batch int, settle time.Duration, duty float64) {
	d.startIndexerWith(slog.New(slog.DiscardHandler), backlog, batch, settle, duty)
}

// WithPrewarmExtension is opt with the prewarm using the extension ext (a name that does not
// exist, for a database without pg_prewarm).
func WithPrewarmExtension(opt Options, ext string) Options {
	opt.prewarmExt = ext
	return opt
}

// PrewarmRuns is how many prewarms d's prewarmer has begun.
func PrewarmRuns(d *Driver) int {
	d.pw.mu.Lock()
	defer d.pw.mu.Unlock()
	return d.pw.runs
}

// PrewarmedRelations are the relations the last prewarm of d read, with where (buffer or read)
// and the pages pg_prewarm said it read.
func PrewarmedRelations(d *Driver) map[string]PrewarmedRelation {
	d.pw.mu.Lock()
	defer d.pw.mu.Unlock()
	out := map[string]PrewarmedRelation{}
	for _, r := range d.pw.last {
		out[r.name] = PrewarmedRelation{Mode: r.mode, Bytes: r.bytes, Blocks: r.blocks}
	}
	return out
}

// PrewarmedRelation is one relation of PrewarmedRelations.
type PrewarmedRelation struct {
	Mode          string
	Bytes, Blocks int64
}

// ForgetServerStart makes d's prewarmer forget the server start it prewarmed for, as after a
// restart of the server, and wakes it as a new connection of the pool would.
func ForgetServerStart(d *Driver) {
	d.pw.mu.Lock()
	d.pw.start = time.Time{}
	d.pw.mu.Unlock()
	d.pw.connected()
}

// Nudge wakes d's prewarmer as a new connection of the pool does.
func Nudge(d *Driver) { d.pw.connected() }

// PlacePrewarm is placePrewarm over relations of these sizes: the mode of each.
func PlacePrewarm(sizes []int64, buffers, cache int64) []string {
	rels := make([]prewarmRel, len(sizes))
	for i, b := range sizes {
		rels[i].bytes = b
	}
	placePrewarm(rels, buffers, cache)
	out := make([]string, len(rels))
	for i, r := range rels {
		out[i] = r.mode
	}
	return out
}
