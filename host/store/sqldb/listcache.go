package sqldb

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/reelforge/reelforge/host/store"
)

// listCache keeps recent pages of the projects listing, the read a frontend repeats most, so a
// repeat costs no SQL (make bench's API target needs it on SQLite: see sqlitestore.Open). Only a
// driver whose database has a single process writing projects may use it (SQLite: the file
// belongs to one host, which app.New enforces); several hosts sharing PostgreSQL could not see
// each other's writes, so pgstore leaves it off.
//
// Coherence rests on one rule: every write to projects calls projectsChanged after it is
// committed (a transaction collects them and reports at its end), which moves the generation
// on. A page is stored with the generation read before its query and served only while the
// generation is unchanged, so a page read from a snapshot older than the last commit is
// never served.
type listCache struct {
	gen atomic.Uint64
	mu  sync.Mutex
	m   map[store.ListProjectsParams]listPage
}

type listPage struct {
	gen   uint64
	items []store.Project
	total int
}

// listCacheMax bounds the pages kept (a few MB); past it the cache starts over.
const listCacheMax = 1024

// CacheProjectLists turns the projects listing cache on for db and its transactions. Call it
// once, before db is used, and only where this process is the database's only writer.
func (db *DB) CacheProjectLists() {
	db.lists = &listCache{m: map[store.ListProjectsParams]listPage{}}
}

func (c *listCache) get(p store.ListProjectsParams) ([]store.Project, int, bool) {
	c.mu.Lock()
	page, ok := c.m[p]
	c.mu.Unlock()
	if !ok || page.gen != c.gen.Load() {
		return nil, 0, false
	}
	// Callers own what they get: a copy of the slice (the projects' fields are never mutated
	// in place).
	return append([]store.Project(nil), page.items...), page.total, true
}

func (c *listCache) put(gen uint64, p store.ListProjectsParams, items []store.Project, total int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen.Load() != gen {
		return // a write landed while the page was read; it may be stale
	}
	if len(c.m) >= listCacheMax {
		clear(c.m)
	}
	// Own the key's strings: a status read from a query string may share a request buffer that
	// the HTTP server reuses.
	p.UserID, p.Status = strings.Clone(p.UserID), strings.Clone(p.Status)
	c.m[p] = listPage{gen: gen, items: append([]store.Project(nil), items...), total: total}
}

// projectsChanged records a committed write to projects (or, inside a transaction, one to be
// reported when the transaction ends).
func (db *DB) projectsChanged() {
	switch {
	case db.lists == nil:
	case db.InTransaction():
		db.txWrites.projects = true
	default:
		db.lists.gen.Add(1)
	}
}

// txWrites is what a transaction wrote that caches must hear about once it ends.
type txWrites struct{ projects bool }
