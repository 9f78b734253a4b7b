package sqldb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/store"
)

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
				"0", a.Add(JOr(d.Metadata, "{}")), a.Add(ts), a.Add(ts), a.Add(d.HeldBy), db.documentLease(a, d)}, ", ") + ")"
		})
}

// documentLease returns the SQL of the lease_until an ingest writes for doc, its values added to
// a: NULL without a holder, else Lease from now by the clock leases are read by (leaseClock: on
// PostgreSQL the database's, so hosts whose clocks disagree agree on when it runs out).
func (db *DB) documentLease(a *Args, doc *store.KnowledgeDocument) string {
	if doc.HeldBy == "" {
		return "NULL"
	}
	_, until := db.leaseClock(a, doc.Lease)
	return until
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
	a := Args{List: []any{d.ID, doc.UserID, doc.Title, doc.Filename, doc.FileSize, doc.FileURL, doc.MimeType, store.DocUploading,
		JOr(doc.Metadata, "{}"), db.T(now), store.DocFailed, store.DocUploading, store.DocParsing, db.T(now.Add(-store.IngestStale)),
		doc.HeldBy}}
	until := db.documentLease(&a, doc)
	dbNow := db.leaseNow(&a) // a lease runs out by the clock that set it
	n, err := db.Exec(ctx, `UPDATE knowledge_documents SET user_id = $2, title = $3, filename = $4, file_size = $5, file_url = $6,
		mime_type = $7, parse_status = $8, error_message = '', chunk_count = 0, metadata = $9, updated_at = $10,
		held_by = $15, lease_until = `+until+`
		WHERE id = $1 AND (parse_status = $11 OR (parse_status IN ($12, $13)
			AND (lease_until < `+dbNow+` OR (lease_until IS NULL AND updated_at < $14))))`, a.List...)
	if err != nil || n == 0 {
		return false, err
	}
	doc.ID, doc.SourceID, doc.CreatedAt, doc.UpdatedAt = d.ID, d.SourceID, d.CreatedAt, now
	doc.ParseStatus, doc.ErrorMessage, doc.ChunkCount = store.DocUploading, "", 0
	return true, nil
}

// RenewDocumentLeases implements store.Knowledge, by the clock of leases (leaseClock).
func (db *DB) RenewDocumentLeases(ctx context.Context, holder string, lease time.Duration) (int64, error) {
	if holder == "" {
		return 0, nil
	}
	a := Args{List: []any{holder, store.DocUploading, store.DocParsing}}
	_, until := db.leaseClock(&a, lease)
	return db.Exec(ctx, `UPDATE knowledge_documents SET lease_until = `+until+` WHERE held_by = $1 AND parse_status IN ($2, $3)`, a.List...)
}

// FailAbandonedDocuments implements store.Knowledge. A lease runs out by the clock that set it
// (leaseClock); updated_at stays the host's time, as every document's is.
func (db *DB) FailAbandonedDocuments(ctx context.Context, host, reason string) (int64, error) {
	a := Args{List: []any{reason, db.T(db.Now()), store.DocFailed, store.DocUploading, store.DocParsing}}
	dbNow := db.leaseNow(&a) // a lease runs out by the clock that set it
	cond := `lease_until < ` + dbNow
	if host != "" {
		cond = `(lease_until < ` + dbNow + ` OR substr(held_by, 1, ` + a.Add(len(host)+1) + `) = ` + a.Add(host+"/") + `)`
	}
	return db.Exec(ctx, `UPDATE knowledge_documents SET parse_status = $3, error_message = $1, updated_at = $2, held_by = ''
		WHERE held_by <> '' AND parse_status IN ($4, $5) AND `+cond, a.List...)
}

// SetDocumentStatus implements store.Knowledge. An indexed document keeps its state
// (ErrConflict): its chunks are written, whatever a late ingest of the same file says.
func (db *DB) SetDocumentStatus(ctx context.Context, p store.DocumentStatusParams) error {
	n, err := db.Exec(ctx, `UPDATE knowledge_documents SET parse_status = $2, error_message = $3, updated_at = $4
		WHERE id = $1 AND parse_status <> $5`, p.ID, p.Status, p.Error, db.T(db.Now()), store.DocIndexed)
	if err == nil && n == 0 {
		return db.IndexedOrMissing(ctx, p.ID)
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
