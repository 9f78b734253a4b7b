package pgstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/sqldb"
)

// batchSender sends a pgx batch: the pool (tests count the round trips through it).
type batchSender interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// addNew is AddDocument of the common case, a document new to a source that exists, in one round
// trip where sqldb's AddDocuments takes six (BEGIN, the lock, the hash lookup, the INSERT, the
// version raise, COMMIT; the target is one document a call, BENCHMARKS.md). Its three statements
// go to the server as one pipelined batch, which runs as one implicit transaction: the commit
// without waiting for the WAL flush (as AddDocuments', see there), the source's row lock, and one
// statement that inserts the document and raises the source's version only when no document of
// the source has its hash (and, for an internal upload, the source is internal already). In READ
// COMMITTED each statement sees what committed before it started, so the third sees any upload
// of the same hash that held the lock before this one, as the hash lookup after the lock does in
// AddDocuments. ok is false when it wrote nothing (the source is missing or must be marked
// internal, or the hash is there: a duplicate or a retry); the caller then takes AddDocuments'
// path, which handles those.
func (d *Driver) addNew(ctx context.Context, nd store.NewDocument) (res *store.AddDocumentResult, ok bool, err error) {
	src, doc := nd.Source, nd.Document
	now := d.DB.Now()
	status := doc.ParseStatus
	if status == "" {
		status = store.DocUploading
	}
	b := &pgx.Batch{}
	b.Queue(`SELECT set_config('synchronous_commit', 'off', true)`)
	b.Queue(`SELECT 1 FROM knowledge_sources WHERE created_by = $1 AND project_id = $2 AND name = $3 FOR UPDATE`,
		src.CreatedBy, src.ProjectID, src.Name)
	b.Queue(addNewSQL, src.CreatedBy, src.ProjectID, src.Name, doc.FileHash, src.Internal, doc.ID, doc.UserID, doc.Title, doc.Filename,
		doc.FileSize, doc.FileURL, doc.MimeType, status, doc.ErrorMessage, sqldb.JOr(doc.Metadata, "{}"), d.DB.T(now), doc.HeldBy,
		leaseMicros(doc))
	br := d.batch.SendBatch(ctx, b)
	var s *store.KnowledgeSource
	_, err = br.Exec()
	if err == nil {
		_, err = br.Exec()
	}
	if err == nil {
		s, err = sqldb.ScanSource(br.QueryRow())
	}
	// Close ends the batch: its error is the implicit transaction's, commit included.
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, mapError(err)
	}
	doc.SourceID, doc.ParseStatus = s.ID, status
	doc.CreatedAt, doc.UpdatedAt = now, now
	return &store.AddDocumentResult{Source: s, Document: doc}, true, nil
}

// leaseMicros is the lease addNewSQL gives doc, in microseconds from the database's clock (as
// sqldb's leaseClock: hosts' clocks may disagree); nil, a NULL lease, without a holder.
func leaseMicros(doc *store.KnowledgeDocument) any {
	if doc.HeldBy == "" {
		return nil
	}
	return doc.Lease.Microseconds()
}

// addNewSQL inserts the document ($6 on) into the source named by $1 to $3 unless a document of
// the source has its hash $4 (an empty hash is never looked up) or $5 (internal) asks to mark a
// source that is not internal yet, and raises the source's version: it returns the source's row
// after that, or no row when it wrote nothing. The hash test is inside NOT EXISTS, not beside it
// (an OR): an OR keeps the subquery a subplan, and pgx's prepared statement then runs a generic
// plan made while the table was small, which hashed every document's hash with a sequential scan
// at each call; inside, the lookup is an anti-join on knowledge_documents_hash at any size
// (TestIngestPlansUseIndexes).
var addNewSQL = `WITH s AS (
		SELECT s.id FROM knowledge_sources s WHERE s.created_by = $1 AND s.project_id = $2 AND s.name = $3
			AND NOT EXISTS (SELECT 1 FROM knowledge_documents d WHERE $4::text <> '' AND d.source_id = s.id AND d.file_hash = $4::text)
			AND (NOT $5::boolean OR s.meta @> '{"internal": true}'::jsonb)),
	ins AS (INSERT INTO knowledge_documents (id, source_id, user_id, title, filename, file_hash, file_size, file_url, mime_type,
			parse_status, error_message, chunk_count, metadata, created_at, updated_at, held_by, lease_until)
		SELECT $6::text, s.id, $7::text, $8::text, $9::text, $4::text, $10::bigint, $11::text, $12::text, $13::text, $14::text, 0,
			$15::jsonb, $16::timestamptz, $16::timestamptz, $17::text, clock_timestamp() + $18::bigint * interval '1 microsecond' FROM s
		RETURNING source_id)
	UPDATE knowledge_sources s SET version = s.version + 1, updated_at = $16::timestamptz FROM ins WHERE s.id = ins.source_id
	RETURNING ` + sqldb.SourceCols
