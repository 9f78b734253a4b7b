package sqldb

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/reelforge/reelforge/host/store"
)

// The knowledge store by concern: sources and documents read here; knowledge_ingest.go adds,
// leases and deletes documents; knowledge_index.go writes their chunks and embeddings;
// knowledge_candidates.go reads chunks and vectors back for search; knowledge_queries.go keeps
// the query log, its feedback and statistics, and the facts.

// Visible is the condition a source (alias s) must meet for v to read it, with v's filters; doc
// names the document id column the DocumentIDs filter applies to ("" to ignore it).
//
// private: the creator only; project: the creator, the owner of the (not deleted) project and
// admins, and with no project the creator only; org: everyone when an admin published it (only
// admins may publish org: a source another account made org before that rule, or whose creator
// is no longer an admin, is its creator's only, so nobody's answer cites it).
func Visible(v store.Viewer, a *Args, doc string) string {
	u := a.Add(v.UserID)
	conds := []string{`((s.visibility = 'org' AND EXISTS (SELECT 1 FROM users ou WHERE ou.id = s.created_by AND ou.role = 'admin'
		AND ou.is_deleted = FALSE)) OR s.created_by = ` + u + ` OR (s.visibility = 'project' AND s.project_id <> '' AND EXISTS (
		SELECT 1 FROM projects p WHERE p.id = s.project_id AND p.user_id = ` + u + ` AND p.is_deleted = FALSE))` + adminCond(v) + `)`}
	conds = a.Eq(conds, "s.project_id", v.ProjectID)
	conds = a.Eq(conds, "s.id", v.SourceID)
	if len(v.SourceNames) > 0 {
		conds = append(conds, a.In("s.name", v.SourceNames))
	}
	if len(v.DocumentIDs) > 0 && doc != "" {
		conds = append(conds, a.In(doc, v.DocumentIDs))
	}
	return strings.Join(conds, " AND ")
}

func adminCond(v store.Viewer) string {
	if !v.Admin {
		return ""
	}
	return ` OR (s.visibility = 'project' AND s.project_id <> '')`
}

// SourceCols are a source's columns (alias s), in the order ScanSource reads them.
const SourceCols = `s.id, s.created_by, s.project_id, s.name, s.visibility, s.scope, s.version, s.meta, s.created_at, s.updated_at`

// ScanSource reads a row of SourceCols.
func ScanSource(r Row) (*store.KnowledgeSource, error) {
	var s store.KnowledgeSource
	var meta json.RawMessage
	if err := r.Scan(&s.ID, &s.CreatedBy, &s.ProjectID, &s.Name, &s.Visibility, &s.Scope, &s.Version, JSON(&meta),
		Time(&s.CreatedAt), Time(&s.UpdatedAt)); err != nil {
		return nil, err
	}
	if len(meta) == 0 {
		meta = json.RawMessage(`{}`)
	}
	s.Meta = meta
	return &s, nil
}

// DocCols are a document's columns (alias d), in the order ScanDocument reads them.
const DocCols = `d.id, d.source_id, d.user_id, d.title, d.filename, d.file_hash, d.file_size, d.file_url, d.mime_type,
	d.parse_status, d.error_message, d.chunk_count, d.metadata, d.created_at, d.updated_at`

// ScanDocument reads a row of DocCols.
func ScanDocument(r Row) (*store.KnowledgeDocument, error) {
	var d store.KnowledgeDocument
	var meta json.RawMessage
	if err := r.Scan(&d.ID, &d.SourceID, &d.UserID, &d.Title, &d.Filename, &d.FileHash, &d.FileSize, &d.FileURL,
		&d.MimeType, &d.ParseStatus, &d.ErrorMessage, &d.ChunkCount, JSON(&meta), Time(&d.CreatedAt), Time(&d.UpdatedAt)); err != nil {
		return nil, err
	}
	if len(meta) == 0 {
		meta = json.RawMessage(`{}`)
	}
	d.Metadata = meta
	return &d, nil
}

// GetSource implements store.Knowledge.
func (db *DB) GetSource(ctx context.Context, id string) (*store.KnowledgeSource, error) {
	return ScanSource(db.QueryRow(ctx, `SELECT `+SourceCols+` FROM knowledge_sources s WHERE s.id = $1`, id))
}

// GetDocument implements store.Knowledge.
func (db *DB) GetDocument(ctx context.Context, id string) (*store.KnowledgeDocument, error) {
	return ScanDocument(db.QueryRow(ctx, `SELECT `+DocCols+` FROM knowledge_documents d WHERE d.id = $1`, id))
}

// CanRead implements store.Knowledge.
func (db *DB) CanRead(ctx context.Context, v store.Viewer, sourceID string) (bool, error) {
	var a Args
	id := a.Add(sourceID)
	var n int
	if err := db.QueryRow(ctx, `SELECT COUNT(*) FROM knowledge_sources s WHERE s.id = `+id+` AND `+Visible(v, &a, ""), a.List...).Scan(&n); err != nil {
		return false, err
	}
	return n > 0, nil
}

// ListSources implements store.Knowledge.
func (db *DB) ListSources(ctx context.Context, p store.ListKnowledgeParams) ([]store.KnowledgeSource, int, error) {
	var a Args
	from := ` FROM knowledge_sources s WHERE ` + Visible(p.Viewer, &a, "")
	return queryPage(ctx, db, SourceCols, from, `s.created_at DESC, s.id`, &a, p.Limit, p.Offset, ScanSource)
}

// ListDocuments implements store.Knowledge.
func (db *DB) ListDocuments(ctx context.Context, p store.ListKnowledgeParams) ([]store.KnowledgeDocument, int, error) {
	var a Args
	cond := Visible(p.Viewer, &a, "d.id")
	from := ` FROM knowledge_documents d JOIN knowledge_sources s ON s.id = d.source_id WHERE ` + cond
	return queryPage(ctx, db, DocCols, from, `d.created_at DESC, d.id`, &a, p.Limit, p.Offset, ScanDocument)
}
