package sqldb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/store"
)

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

// AddDocument implements store.Knowledge: AddDocuments with one document.
func (db *DB) AddDocument(ctx context.Context, src store.NewSourceParams, doc *store.KnowledgeDocument) (*store.AddDocumentResult, error) {
	out, err := db.AddDocuments(ctx, []store.NewDocument{{Source: src, Document: doc}})
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// sourceKey is what names a knowledge source (its unique key).
type sourceKey struct{ createdBy, projectID, name string }

// hashKey is a file hash in a source: one document at most (AddDocument).
type hashKey struct{ sourceID, hash string }

// addSource is a source of an AddDocuments call: its row as the call leaves it, and the documents
// the call added to it or retried in it.
type addSource struct {
	row   *store.KnowledgeSource
	added int
}

// AddDocuments implements store.Knowledge. The result is what AddDocument for each document in
// turn gives, in a few statements instead of five a document (each a round trip on PostgreSQL):
// the call's sources are found or created and locked once each, the documents already stored
// under the call's hashes are read in one query, the new documents are written by one multi-row
// INSERT and each source's version is raised once, by the documents added to it (or retried).
func (db *DB) AddDocuments(ctx context.Context, docs []store.NewDocument) ([]*store.AddDocumentResult, error) {
	out := make([]*store.AddDocumentResult, len(docs))
	err := db.WithTx(ctx, func(tx *DB) error { return tx.addDocuments(ctx, docs, out) })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// addDocuments is AddDocuments inside its transaction, filling out.
func (db *DB) addDocuments(ctx context.Context, docs []store.NewDocument, out []*store.AddDocumentResult) error {
	now := db.Now()
	sources := map[sourceKey]*addSource{}
	var order []*addSource
	var hashes []hashKey
	for _, nd := range docs {
		k := sourceKey{nd.Source.CreatedBy, nd.Source.ProjectID, nd.Source.Name}
		as := sources[k]
		if as == nil {
			s, err := db.lockSource(ctx, nd.Source, now)
			if err != nil {
				return err
			}
			as = &addSource{row: s}
			sources[k] = as
			order = append(order, as)
		}
		if nd.Document.FileHash != "" {
			hashes = append(hashes, hashKey{as.row.ID, nd.Document.FileHash})
		}
	}
	stored, err := db.documentsByHash(ctx, hashes)
	if err != nil {
		return err
	}
	var fresh []*store.KnowledgeDocument // to insert
	seen := map[hashKey]bool{}
	for i, nd := range docs {
		as := sources[sourceKey{nd.Source.CreatedBy, nd.Source.ProjectID, nd.Source.Name}]
		s, doc := as.row, nd.Document
		if nd.Source.Internal && !s.Internal() {
			if err := db.markInternal(ctx, s); err != nil {
				return err
			}
		}
		res := &store.AddDocumentResult{}
		if doc.FileHash != "" {
			k := hashKey{s.ID, doc.FileHash}
			d, found := stored[k]
			if seen[k] {
				// An earlier document of this call has the hash: AddDocument one at a time would
				// find the document it inserted or claimed, so this one looks as it would (rare:
				// kb sends repeated content of one call one at a time after the batch).
				if err := db.insertDocuments(ctx, fresh, now); err != nil {
					return err
				}
				fresh = nil
				d, err = db.firstDocument(ctx, k)
				if err != nil && !errors.Is(err, store.ErrNotFound) {
					return err
				}
				found = err == nil
			}
			seen[k] = true
			if found {
				claimed, err := db.retryDocument(ctx, d, doc, now)
				if err != nil {
					return err
				}
				if claimed {
					res.Document, res.Retry = doc, true
				} else {
					res.Document, res.Duplicate = d, true
				}
			}
		}
		if res.Document == nil {
			doc.SourceID = s.ID
			doc.CreatedAt, doc.UpdatedAt = now, now
			if doc.ParseStatus == "" {
				doc.ParseStatus = store.DocUploading
			}
			fresh = append(fresh, doc)
			res.Document = doc
		}
		if !res.Duplicate {
			as.added++
			s.Version++
			s.UpdatedAt = now
		}
		// Each result holds the source as it was after its own document, as one AddDocument
		// after the other would see it.
		row := *s
		res.Source = &row
		out[i] = res
	}
	if err := db.insertDocuments(ctx, fresh, now); err != nil {
		return err
	}
	for _, as := range order {
		if as.added == 0 {
			continue
		}
		if _, err := db.Exec(ctx, `UPDATE knowledge_sources SET version = version + $2, updated_at = $3 WHERE id = $1`,
			as.row.ID, as.added, db.T(now)); err != nil {
			return err
		}
	}
	return nil
}

// lockSource finds or creates the source src names and locks its row to the end of the
// transaction, so uploads into one source take turns between here and the commit (SQLite's single
// writer does so already): the check for documents of the same hash that follows then sees any
// upload that went first, and two uploads of one file at once make one document, not two. An
// AddDocuments call locks its sources in the order its documents name them first, as AddDocument
// one at a time did. The source exists already for every upload into it but the first, so it is
// locked straight away and created only when missing: one statement (a round trip on PostgreSQL)
// a call fewer, and one more once per source.
func (db *DB) lockSource(ctx context.Context, src store.NewSourceParams, now time.Time) (*store.KnowledgeSource, error) {
	lock := func() (*store.KnowledgeSource, error) {
		return ScanSource(db.QueryRow(ctx, `SELECT `+SourceCols+` FROM knowledge_sources s
			WHERE s.created_by = $1 AND s.project_id = $2 AND s.name = $3`+db.rowLock(lockUpdate), src.CreatedBy, src.ProjectID, src.Name))
	}
	if s, err := lock(); !errors.Is(err, store.ErrNotFound) {
		return s, err
	}
	scope := "org"
	if src.ProjectID != "" {
		scope = "project"
	}
	id := src.ID
	if id == "" {
		id = uuid.NewString()
	}
	meta := json.RawMessage(`{}`)
	if src.Internal {
		meta = json.RawMessage(`{"internal": true}`)
	}
	if _, err := db.Exec(ctx, `INSERT INTO knowledge_sources (id, created_by, project_id, name, visibility, scope, version, meta, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, 0, $7, $8, $8) ON CONFLICT (created_by, project_id, name) DO NOTHING`,
		id, src.CreatedBy, src.ProjectID, src.Name, src.Visibility, scope, J(meta), db.T(now)); err != nil {
		return nil, err
	}
	return lock()
}

// documentsByHash returns, for each of keys held by a stored document, the earliest such document.
// The keys are joined as VALUES, so each is one lookup in knowledge_documents_hash whatever the
// planner's statistics say (an IN list on each column had PostgreSQL read a whole source's rows
// on a table not analyzed yet).
func (db *DB) documentsByHash(ctx context.Context, keys []hashKey) (map[hashKey]*store.KnowledgeDocument, error) {
	found := map[hashKey]*store.KnowledgeDocument{}
	var distinct []hashKey
	seen := map[hashKey]bool{}
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			distinct = append(distinct, k)
		}
	}
	err := inBatches(distinct, func(batch []hashKey) error {
		var a Args
		vals := make([]string, len(batch))
		for i, k := range batch {
			vals[i] = "(" + a.Add(k.sourceID) + ", " + a.Add(k.hash) + ")"
		}
		q := `SELECT ` + DocCols + ` FROM knowledge_documents d JOIN (VALUES ` + strings.Join(vals, ", ") + `) AS k
			ON d.source_id = k.column1 AND d.file_hash = k.column2 ORDER BY d.created_at`
		return QueryEach(ctx, db, q, a.List, func(r Row) error {
			d, err := ScanDocument(r)
			if err != nil {
				return err
			}
			if k := (hashKey{d.SourceID, d.FileHash}); found[k] == nil {
				found[k] = d
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return found, nil
}

// firstDocument returns the earliest document of a hash in a source (ErrNotFound when none).
func (db *DB) firstDocument(ctx context.Context, k hashKey) (*store.KnowledgeDocument, error) {
	return ScanDocument(db.QueryRow(ctx, `SELECT `+DocCols+` FROM knowledge_documents d
		WHERE d.source_id = $1 AND d.file_hash = $2 ORDER BY d.created_at LIMIT 1`, k.sourceID, k.hash))
}

// insertDocuments inserts new documents (their fields set by addDocuments) in multi-row INSERTs.
func (db *DB) insertDocuments(ctx context.Context, docs []*store.KnowledgeDocument, now time.Time) error {
	ts := db.T(now)
	return db.InsertRows(ctx, `INSERT INTO knowledge_documents (id, source_id, user_id, title, filename, file_hash, file_size,
		file_url, mime_type, parse_status, error_message, chunk_count, metadata, created_at, updated_at, held_by, lease_until)`, len(docs),
		func(i int, a *Args) string {
			d := docs[i]
			return "(" + strings.Join([]string{a.Add(d.ID), a.Add(d.SourceID), a.Add(d.UserID), a.Add(d.Title), a.Add(d.Filename),
				a.Add(d.FileHash), a.Add(d.FileSize), a.Add(d.FileURL), a.Add(d.MimeType), a.Add(d.ParseStatus), a.Add(d.ErrorMessage),
				"0", a.Add(JOr(d.Metadata, "{}")), a.Add(ts), a.Add(ts), a.Add(d.HeldBy), a.Add(db.TP(d.LeaseUntil))}, ", ") + ")"
		})
}

// retryDocument claims the existing document d of the same hash for a new ingest when d is not
// indexed and no ingest is working on it: failed, or left uploading or parsing by a holder whose
// lease ran out (a host killed mid-ingest; a document written without a lease: for longer than
// store.IngestStale). The claim is one conditional UPDATE, so two uploads racing for it cannot
// both win; doc takes d's id and creation time and the new upload's other fields. It reports false
// when d stays as it is (a duplicate).
func (db *DB) retryDocument(ctx context.Context, d, doc *store.KnowledgeDocument, now time.Time) (bool, error) {
	switch d.ParseStatus {
	case store.DocFailed, store.DocUploading, store.DocParsing:
	default:
		return false, nil
	}
	n, err := db.Exec(ctx, `UPDATE knowledge_documents SET user_id = $2, title = $3, filename = $4, file_size = $5, file_url = $6,
		mime_type = $7, parse_status = $8, error_message = '', chunk_count = 0, metadata = $9, updated_at = $10,
		held_by = $15, lease_until = $16
		WHERE id = $1 AND (parse_status = $11 OR (parse_status IN ($12, $13)
			AND (lease_until < $10 OR (lease_until IS NULL AND updated_at < $14))))`,
		d.ID, doc.UserID, doc.Title, doc.Filename, doc.FileSize, doc.FileURL, doc.MimeType, store.DocUploading,
		JOr(doc.Metadata, "{}"), db.T(now), store.DocFailed, store.DocUploading, store.DocParsing, db.T(now.Add(-store.IngestStale)),
		doc.HeldBy, db.TP(doc.LeaseUntil))
	if err != nil || n == 0 {
		return false, err
	}
	doc.ID, doc.SourceID, doc.CreatedAt, doc.UpdatedAt = d.ID, d.SourceID, d.CreatedAt, now
	doc.ParseStatus, doc.ErrorMessage, doc.ChunkCount = store.DocUploading, "", 0
	return true, nil
}

// RenewDocumentLeases implements store.Knowledge.
func (db *DB) RenewDocumentLeases(ctx context.Context, holder string, lease time.Duration) (int64, error) {
	if holder == "" {
		return 0, nil
	}
	return db.Exec(ctx, `UPDATE knowledge_documents SET lease_until = $2 WHERE held_by = $1 AND parse_status IN ($3, $4)`,
		holder, db.T(db.Now().Add(lease)), store.DocUploading, store.DocParsing)
}

// FailAbandonedDocuments implements store.Knowledge.
func (db *DB) FailAbandonedDocuments(ctx context.Context, host, reason string) (int64, error) {
	now := db.T(db.Now())
	cond := `lease_until < $2`
	args := []any{reason, now, store.DocFailed, store.DocUploading, store.DocParsing}
	if host != "" {
		args = append(args, host+"/", len(host)+1)
		cond = `(lease_until < $2 OR substr(held_by, 1, $7) = $6)`
	}
	return db.Exec(ctx, `UPDATE knowledge_documents SET parse_status = $3, error_message = $1, updated_at = $2, held_by = ''
		WHERE held_by <> '' AND parse_status IN ($4, $5) AND `+cond, args...)
}

// SetDocumentStatus implements store.Knowledge. An indexed document keeps its state
// (ErrConflict): its chunks are written, whatever a late ingest of the same file says.
func (db *DB) SetDocumentStatus(ctx context.Context, id, status, errMsg string) error {
	n, err := db.Exec(ctx, `UPDATE knowledge_documents SET parse_status = $2, error_message = $3, updated_at = $4
		WHERE id = $1 AND parse_status <> $5`, id, status, errMsg, db.T(db.Now()), store.DocIndexed)
	if err == nil && n == 0 {
		return db.IndexedOrMissing(ctx, id)
	}
	return err
}

// IndexedOrMissing is the error of a document update that matched no row: ErrConflict when the
// document exists (it is indexed already), ErrNotFound otherwise.
func (db *DB) IndexedOrMissing(ctx context.Context, id string) error {
	var n int
	if err := db.QueryRow(ctx, `SELECT COUNT(*) FROM knowledge_documents WHERE id = $1`, id).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return fmt.Errorf("%w: document %s is indexed already", store.ErrConflict, id)
	}
	return store.ErrNotFound
}

// EmbeddingRow is one vector to write.
type EmbeddingRow struct {
	ChunkID string
	Model   string
	Vector  []float32
}

// EmbeddingWriter inserts embedding rows; drivers with a vector column fill it too.
type EmbeddingWriter func(ctx context.Context, tx *DB, rows []EmbeddingRow, now time.Time) error

// insertBatch is the most rows of one multi-row INSERT.
const insertBatch = 50

// InsertRows runs head ("INSERT INTO table (cols)") with multi-row VALUES over n rows in batches;
// row adds the values of row i to a and returns its "(...)" tuple.
func (db *DB) InsertRows(ctx context.Context, head string, n int, row func(i int, a *Args) string) error {
	return db.insertRowsBatch(ctx, head, n, insertBatch, row)
}

// insertRowsBatch is InsertRows with at most batch rows a statement.
func (db *DB) insertRowsBatch(ctx context.Context, head string, n, batch int, row func(i int, a *Args) string) error {
	for start := 0; start < n; start += batch {
		var a Args
		vals := make([]string, 0, batch)
		for i := start; i < min(n, start+batch); i++ {
			vals = append(vals, row(i, &a))
		}
		if _, err := db.Exec(ctx, head+" VALUES "+strings.Join(vals, ", "), a.List...); err != nil {
			return err
		}
	}
	return nil
}

// InsertEmbeddings is the EmbeddingWriter of drivers without a vector column.
func InsertEmbeddings(ctx context.Context, tx *DB, rows []EmbeddingRow, now time.Time) error {
	ts := tx.T(now)
	return tx.InsertRows(ctx, `INSERT INTO knowledge_embeddings (chunk_id, model, embedding, created_at)`, len(rows),
		func(i int, a *Args) string {
			r := rows[i]
			return "(" + a.Add(r.ChunkID) + ", " + a.Add(r.Model) + ", " + a.Add(EncodeVector(r.Vector)) + ", " + a.Add(ts) + ")"
		})
}

// WriteChunkRows writes the chunks of each of docs and their embeddings (float32 bytes) with
// multi-row INSERTs and marks each document indexed, all in one transaction: the write of a
// driver whose database has no faster path for it (SQLite, in-process; pgstore has its own). It
// returns the documents as it left them, in the order of docs.
//
// The chunks of all docs go in first, in as few statements as chunkInsertBatch allows, then all
// embeddings, then the marks. SQLite's keyword index (FTS5, filled by a trigger on the chunks)
// keeps the terms of the transaction in memory and writes them out as a new segment of its index
// whenever a statement opens a savepoint (every multi-row INSERT does), so a statement of chunks
// a document, each followed by that document's embeddings, wrote a segment a document, and the
// automerge rewrote them again: a fifth of the host's CPU in the bench's HTTP case (batch/text,
// 50 short documents a call, issue 24; one segment a group of kb.BatchGroup: host CPU MB/s
// 1.68 to 2.10 in four interleaved pairs, BENCHMARKS.md).
func (db *DB) WriteChunkRows(ctx context.Context, docs []store.WriteChunksParams) ([]*store.KnowledgeDocument, error) {
	type row struct {
		c   *store.KnowledgeChunk
		doc string
	}
	var rows []row
	var vecs []EmbeddingRow
	for _, p := range docs {
		for i := range p.Chunks {
			c := &p.Chunks[i]
			rows = append(rows, row{c, p.DocumentID})
			if c.Embedding != nil {
				vecs = append(vecs, EmbeddingRow{ChunkID: c.ID, Model: c.EmbeddingModel, Vector: c.Embedding})
			}
		}
	}
	out := make([]*store.KnowledgeDocument, len(docs))
	err := db.WithTx(ctx, func(tx *DB) error {
		now := tx.Now()
		ts := tx.T(now)
		if err := tx.insertRowsBatch(ctx, `INSERT INTO knowledge_chunks (id, source_id, document_id, chunk_index, chunk_text, heading,
			token_count, search_text, metadata, embedding_model, created_at)`, len(rows), chunkInsertBatch, func(i int, a *Args) string {
			c := rows[i].c
			return "(" + strings.Join([]string{a.Add(c.ID), a.Add(c.SourceID), a.Add(rows[i].doc), a.Add(c.Index), a.Add(c.Text),
				a.Add(c.Heading), a.Add(c.TokenCount), a.Add(c.SearchText), a.Add(JOr(c.Metadata, "{}")), a.Add(c.EmbeddingModel),
				a.Add(ts)}, ", ") + ")"
		}); err != nil {
			return err
		}
		if err := InsertEmbeddings(ctx, tx, vecs, now); err != nil {
			return err
		}
		return tx.markIndexedAll(ctx, docs, now, out)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// markIndexedAll is MarkIndexed of each of docs, into out, with one UPDATE for them all (a
// statement a document was about a twentieth of the host's CPU in the bench's HTTP case). A
// document it did not update is indexed already or missing: the same error as MarkIndexed's. A
// document named twice takes MarkIndexed one at a time, whose second call is the conflict.
func (db *DB) markIndexedAll(ctx context.Context, docs []store.WriteChunksParams, at time.Time, out []*store.KnowledgeDocument) error {
	seen := make(map[string]bool, len(docs))
	for _, p := range docs {
		seen[p.DocumentID] = true
	}
	if len(docs) == 1 || len(seen) < len(docs) {
		for k, p := range docs {
			doc, err := db.MarkIndexed(ctx, p.DocumentID, len(p.Chunks), at)
			if err != nil {
				return err
			}
			out[k] = doc
		}
		return nil
	}
	var a Args
	status, ts := a.Add(store.DocIndexed), a.Add(db.T(at))
	vals := make([]string, len(docs))
	for k, p := range docs {
		vals[k] = "(" + a.Add(p.DocumentID) + ", " + a.Add(len(p.Chunks)) + ")"
	}
	byID := make(map[string]*store.KnowledgeDocument, len(docs))
	err := QueryEach(ctx, db, `UPDATE knowledge_documents SET parse_status = `+status+`, error_message = '', chunk_count = v.column2,
		updated_at = `+ts+` FROM (VALUES `+strings.Join(vals, ", ")+`) AS v
		WHERE knowledge_documents.id = v.column1 AND knowledge_documents.parse_status <> `+status+` RETURNING `+markedCols, a.List,
		func(r Row) error {
			doc, err := ScanDocument(r)
			if err == nil {
				byID[doc.ID] = doc
			}
			return err
		})
	if err != nil {
		return err
	}
	for k, p := range docs {
		if out[k] = byID[p.DocumentID]; out[k] == nil {
			return db.IndexedOrMissing(ctx, p.DocumentID)
		}
	}
	return nil
}

// chunkInsertBatch is the most chunk rows of one INSERT of WriteChunkRows (11 parameters a row):
// a group of kb.BatchGroup short documents is one statement.
const chunkInsertBatch = 200

// MarkIndexed ends a document's ingest, in the transaction that wrote its chunks, and returns the
// document as it leaves it. A document is indexed once: a second ingest of it (a retried upload
// racing a slow first one) gets ErrConflict, so its transaction rolls back instead of adding a
// second set of chunks.
func (db *DB) MarkIndexed(ctx context.Context, docID string, chunks int, at time.Time) (*store.KnowledgeDocument, error) {
	doc, err := ScanDocument(db.QueryRow(ctx, `UPDATE knowledge_documents SET parse_status = $2, error_message = '', chunk_count = $3,
		updated_at = $4 WHERE id = $1 AND parse_status <> $2 RETURNING `+markedCols, docID, store.DocIndexed, chunks, db.T(at)))
	if errors.Is(err, store.ErrNotFound) {
		return nil, db.IndexedOrMissing(ctx, docID)
	}
	return doc, err
}

// markedCols are DocCols unqualified, for a RETURNING clause (SQLite's names the table's
// columns only).
var markedCols = strings.ReplaceAll(DocCols, "d.", "")

// markInternal sets internal in the meta of an existing source, keeping its other keys.
func (db *DB) markInternal(ctx context.Context, s *store.KnowledgeSource) error {
	m := map[string]any{}
	_ = json.Unmarshal(s.Meta, &m) // absent or malformed meta: only internal is kept
	m["internal"] = true
	raw, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if _, err := db.Exec(ctx, `UPDATE knowledge_sources SET meta = $2 WHERE id = $1`, s.ID, J(raw)); err != nil {
		return err
	}
	s.Meta = raw
	return nil
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
func (db *DB) ListSources(ctx context.Context, v store.Viewer, limit, offset int) ([]store.KnowledgeSource, int, error) {
	var a Args
	from := ` FROM knowledge_sources s WHERE ` + Visible(v, &a, "")
	return queryPage(ctx, db, SourceCols, from, `s.created_at DESC, s.id`, &a, limit, offset, ScanSource)
}

// ListDocuments implements store.Knowledge.
func (db *DB) ListDocuments(ctx context.Context, v store.Viewer, limit, offset int) ([]store.KnowledgeDocument, int, error) {
	var a Args
	cond := Visible(v, &a, "d.id")
	from := ` FROM knowledge_documents d JOIN knowledge_sources s ON s.id = d.source_id WHERE ` + cond
	return queryPage(ctx, db, DocCols, from, `d.created_at DESC, d.id`, &a, limit, offset, ScanDocument)
}

// ChunkCols are the columns ScanChunk reads, over chunks c, sources s and documents d.
const ChunkCols = `c.id, c.document_id, d.title, c.source_id, s.name, c.chunk_index, c.chunk_text, c.heading, c.search_text, c.metadata, c.embedding_model`

// ChunkFrom joins a chunk to its source and document.
const ChunkFrom = ` FROM knowledge_chunks c JOIN knowledge_sources s ON s.id = c.source_id JOIN knowledge_documents d ON d.id = c.document_id `

// ScoredChunks runs q, whose rows are ChunkCols and then a score, and reads them; set puts the
// score where it belongs (ChunkRow.Keyword, ChunkRow.Vector).
func ScoredChunks(ctx context.Context, db *DB, q string, args []any, set func(c *store.ChunkRow, score float64)) ([]store.ChunkRow, error) {
	var out []store.ChunkRow
	err := QueryEach(ctx, db, q, args, func(r Row) error {
		var score float64
		c, err := ScanChunk(r, &score)
		if err != nil {
			return err
		}
		set(&c, score)
		out = append(out, c)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ScanChunk reads ChunkCols, then extra destinations.
func ScanChunk(r Row, extra ...any) (store.ChunkRow, error) {
	var c store.ChunkRow
	var meta json.RawMessage
	dest := append([]any{&c.ID, &c.DocumentID, &c.DocumentTitle, &c.SourceID, &c.SourceName, &c.Index, &c.Text, &c.Heading,
		&c.SearchText, JSON(&meta), &c.EmbeddingModel}, extra...)
	if err := r.Scan(dest...); err != nil {
		return c, err
	}
	c.Metadata = meta
	return c, nil
}

// EmbeddingRefs implements store.Knowledge.
func (db *DB) EmbeddingRefs(ctx context.Context, v store.Viewer) ([]store.EmbeddingRef, error) {
	var a Args
	rows, err := db.Query(ctx, `SELECT c.id, c.embedding_model FROM knowledge_chunks c JOIN knowledge_sources s ON s.id = c.source_id
		WHERE c.embedding_model <> '' AND `+Visible(v, &a, "c.document_id"), a.List...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.EmbeddingRef
	for rows.Next() {
		var r store.EmbeddingRef
		if err := rows.Scan(&r.ChunkID, &r.Model); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Embeddings implements store.Knowledge.
func (db *DB) Embeddings(ctx context.Context, refs []store.EmbeddingRef) (map[string][]float32, error) {
	return db.EmbeddingsWith(ctx, refs, "")
}

// EmbeddingsWith is Embeddings for a driver that keeps some vectors in a column of its own
// instead of the float32 bytes: half is an SQL expression reading that column as an array of
// float32, used where the bytes are NULL ("" when there is no such column).
func (db *DB) EmbeddingsWith(ctx context.Context, refs []store.EmbeddingRef, half string) (map[string][]float32, error) {
	cols := "chunk_id, embedding"
	if half != "" {
		cols += ", " + half
	}
	out := make(map[string][]float32, len(refs))
	byModel := map[string][]string{}
	for _, r := range refs {
		byModel[r.Model] = append(byModel[r.Model], r.ChunkID)
	}
	for model, ids := range byModel {
		err := inBatches(ids, func(batch []string) error {
			var a Args
			q := `SELECT ` + cols + ` FROM knowledge_embeddings WHERE model = ` + a.Add(model) + ` AND ` + a.In("chunk_id", batch)
			return QueryEach(ctx, db, q, a.List, func(r Row) error {
				var id string
				var b []byte
				var h []float32
				dest := []any{&id, &b}
				if half != "" {
					dest = append(dest, &h)
				}
				if err := r.Scan(dest...); err != nil {
					return err
				}
				if b == nil && h != nil {
					out[id] = h
				} else {
					out[id] = DecodeVector(b)
				}
				return nil
			})
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ChunksByID implements store.Knowledge.
func (db *DB) ChunksByID(ctx context.Context, ids []string) ([]store.ChunkRow, error) {
	var out []store.ChunkRow
	err := inBatches(ids, func(batch []string) error {
		var a Args
		q := `SELECT ` + ChunkCols + ChunkFrom + ` WHERE ` + a.In("c.id", batch)
		return QueryEach(ctx, db, q, a.List, func(r Row) error {
			c, err := ScanChunk(r)
			if err != nil {
				return err
			}
			out = append(out, c)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// inBatch is how many values (ids, or hash pairs) one query of inBatches holds at most.
const inBatch = 500

// inBatches calls f with items in order, inBatch at a time, and stops at the first error.
func inBatches[T any](items []T, f func(batch []T) error) error {
	for len(items) > 0 {
		n := min(len(items), inBatch)
		if err := f(items[:n]); err != nil {
			return err
		}
		items = items[n:]
	}
	return nil
}

// SourceChunks implements store.Knowledge.
func (db *DB) SourceChunks(ctx context.Context, sourceID, afterID string, limit int) ([]store.ChunkRow, error) {
	rows, err := db.Query(ctx, `SELECT `+ChunkCols+ChunkFrom+` WHERE c.source_id = $1 AND c.id > $2 ORDER BY c.id LIMIT $3`,
		sourceID, afterID, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.ChunkRow
	for rows.Next() {
		c, err := ScanChunk(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// AddEmbeddingsWith writes vectors of model through put, replacing earlier rows of that model.
func (db *DB) AddEmbeddingsWith(ctx context.Context, model string, vecs map[string][]float32, put EmbeddingWriter) error {
	ids := make([]string, 0, len(vecs))
	for id := range vecs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return db.WithTx(ctx, func(tx *DB) error {
		err := inBatches(ids, func(batch []string) error {
			var a Args
			q := `DELETE FROM knowledge_embeddings WHERE model = ` + a.Add(model) + ` AND ` + a.In("chunk_id", batch)
			_, err := tx.Exec(ctx, q, a.List...)
			return err
		})
		if err != nil {
			return err
		}
		rows := make([]EmbeddingRow, 0, len(ids))
		for _, id := range ids {
			rows = append(rows, EmbeddingRow{ChunkID: id, Model: model, Vector: vecs[id]})
		}
		return put(ctx, tx, rows, tx.Now())
	})
}

// SwitchEmbeddings implements store.Knowledge.
func (db *DB) SwitchEmbeddings(ctx context.Context, sourceID, model string) error {
	return db.WithTx(ctx, func(tx *DB) error {
		if _, err := tx.Exec(ctx, `UPDATE knowledge_chunks SET embedding_model = $2 WHERE source_id = $1`, sourceID, model); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM knowledge_embeddings WHERE model <> $2 AND chunk_id IN (
			SELECT id FROM knowledge_chunks WHERE source_id = $1)`, sourceID, model)
		return err
	})
}

const queryCols = `id, user_id, project_id, mode, query_text, top_k, latency_ms, results, answer_text, citations, cited,
	feedback_rating, feedback_notes, created_at`

// LogQuery implements store.Knowledge.
func (db *DB) LogQuery(ctx context.Context, q *store.KnowledgeQuery) error {
	q.CreatedAt = db.Now()
	_, err := db.Exec(ctx, `INSERT INTO knowledge_queries (`+queryCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, NULL, '', $12)`,
		q.ID, q.UserID, q.ProjectID, q.Mode, q.QueryText, q.TopK, q.LatencyMS, JOr(q.Results, "[]"), q.AnswerText,
		JOr(q.Citations, "[]"), q.Cited, db.T(q.CreatedAt))
	return err
}

// GetQuery implements store.Knowledge.
func (db *DB) GetQuery(ctx context.Context, id string) (*store.KnowledgeQuery, error) {
	var q store.KnowledgeQuery
	var rating *int64
	if err := db.QueryRow(ctx, `SELECT `+queryCols+` FROM knowledge_queries WHERE id = $1`, id).Scan(&q.ID, &q.UserID,
		&q.ProjectID, &q.Mode, &q.QueryText, &q.TopK, &q.LatencyMS, JSON(&q.Results), &q.AnswerText, JSON(&q.Citations),
		&q.Cited, &rating, &q.FeedbackNotes, Time(&q.CreatedAt)); err != nil {
		return nil, err
	}
	if rating != nil {
		r := int(*rating)
		q.FeedbackRating = &r
	}
	return &q, nil
}

// SetFeedback implements store.Knowledge.
func (db *DB) SetFeedback(ctx context.Context, id string, rating int, notes string) error {
	n, err := db.Exec(ctx, `UPDATE knowledge_queries SET feedback_rating = $2, feedback_notes = $3 WHERE id = $1`, id, rating, notes)
	if err == nil && n == 0 {
		return store.ErrNotFound
	}
	return err
}

// QueryStats implements store.Knowledge.
func (db *DB) QueryStats(ctx context.Context, userID string, window int) (*store.QueryStats, error) {
	var st store.QueryStats
	var a Args
	who := "TRUE"
	if userID != "" {
		who = "user_id = " + a.Add(userID)
	}
	rows, err := db.Query(ctx, `SELECT mode, COUNT(*), COUNT(feedback_rating), COALESCE(SUM(feedback_rating), 0)
		FROM knowledge_queries WHERE `+who+` GROUP BY mode`, a.List...)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var mode string
		var n, fb, sum int64
		if err := rows.Scan(&mode, &n, &fb, &sum); err != nil {
			rows.Close()
			return nil, err
		}
		switch mode {
		case store.QueryAsk:
			st.Asks = int(n)
		case store.QuerySearch:
			st.Searches = int(n)
		}
		st.FeedbackCount += int(fb)
		st.RatingSum += int(sum)
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return nil, err
	}
	for _, mode := range []string{store.QueryAsk, store.QuerySearch} {
		var b Args
		w := "TRUE"
		if userID != "" {
			w = "user_id = " + b.Add(userID)
		}
		m := b.Add(mode)
		rows, err := db.Query(ctx, `SELECT latency_ms, cited FROM knowledge_queries WHERE `+w+` AND mode = `+m+`
			ORDER BY created_at DESC LIMIT `+b.Add(window), b.List...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var lat float64
			var cited bool
			if err := rows.Scan(&lat, &cited); err != nil {
				rows.Close()
				return nil, err
			}
			if mode == store.QueryAsk {
				st.AskLatencies = append(st.AskLatencies, lat)
				st.RecentAsks++
				if cited {
					st.RecentCited++
				}
			} else {
				st.SearchLatencies = append(st.SearchLatencies, lat)
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, err
		}
	}
	return &st, nil
}

// PutFact implements store.Knowledge.
func (db *DB) PutFact(ctx context.Context, f *store.Fact) error {
	now := db.Now()
	if _, err := db.Exec(ctx, `INSERT INTO facts (id, user_id, key, value, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5)
		ON CONFLICT (user_id, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
		f.ID, f.UserID, f.Key, f.Value, db.T(now)); err != nil {
		return err
	}
	return db.QueryRow(ctx, `SELECT id, created_at, updated_at FROM facts WHERE user_id = $1 AND key = $2`, f.UserID, f.Key).
		Scan(&f.ID, Time(&f.CreatedAt), Time(&f.UpdatedAt))
}

// ListFacts implements store.Knowledge.
func (db *DB) ListFacts(ctx context.Context, userID string) ([]store.Fact, error) {
	return queryAll(ctx, db, func(r Row) (*store.Fact, error) {
		var f store.Fact
		return &f, r.Scan(&f.ID, &f.UserID, &f.Key, &f.Value, Time(&f.CreatedAt), Time(&f.UpdatedAt))
	}, `SELECT id, user_id, key, value, created_at, updated_at FROM facts WHERE user_id = $1 ORDER BY key`, userID)
}

// DeleteDocument implements store.Knowledge. The keyword index follows the chunk rows: SQLite's
// FTS5 table by its delete trigger, PostgreSQL's tsvector is a column of the row.
func (db *DB) DeleteDocument(ctx context.Context, id string) ([]string, error) {
	var ids []string
	err := db.WithTx(ctx, func(tx *DB) error {
		var sourceID string
		if err := tx.QueryRow(ctx, `SELECT source_id FROM knowledge_documents WHERE id = $1`, id).Scan(&sourceID); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT id FROM knowledge_chunks WHERE document_id = $1`, id)
		if err != nil {
			return err
		}
		for rows.Next() {
			var c string
			if err := rows.Scan(&c); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM knowledge_embeddings WHERE chunk_id IN (
			SELECT id FROM knowledge_chunks WHERE document_id = $1)`, id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM knowledge_chunks WHERE document_id = $1`, id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM knowledge_documents WHERE id = $1`, id); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE knowledge_sources SET version = version + 1, updated_at = $2 WHERE id = $1`, sourceID, tx.T(tx.Now()))
		return err
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// DeleteFact implements store.Knowledge.
func (db *DB) DeleteFact(ctx context.Context, userID, idOrKey string) error {
	n, err := db.Exec(ctx, `DELETE FROM facts WHERE user_id = $1 AND (id = $2 OR key = $2)`, userID, idOrKey)
	if err == nil && n == 0 {
		return store.ErrNotFound
	}
	return err
}
