//go:build !sqlite_fts5

package sqlitestore

// go-sqlite3 compiles SQLite's FTS5 module, which the keyword index needs, only under the build
// tag sqlite_fts5. Without it every database would fail its first migration at run time; this
// file makes the build fail instead, naming the fix. The Makefile passes the tag (GOFLAGS); by
// hand: go build -tags sqlite_fts5, go test -tags sqlite_fts5.
var _ = build_with_tags_sqlite_fts5_see_README
