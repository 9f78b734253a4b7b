package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/sqldb"
)

// WriteChunkPieces writes the chunks of document docID as next yields them, in pieces (in chunk
// order; last marks the final one), and marks the document indexed with their count: what
// WriteChunks does with all of them at once, with the same outcome (one transaction, committed
// with the WAL flush before it returns; a document indexed already is ErrConflict, a missing one
// ErrNotFound, and then nothing is written), and it returns the document as the write left it.
//
// Why pieces: one document a call (the target is ingest of one document a call, BENCHMARKS.md)
// was one step after another, the server idle while the host made and encoded the chunks, the
// host idle while the server wrote them. Here each piece goes to the server as soon as it is
// encoded, pipelined on one connection (no wait for its answer), so the server writes a piece
// while the host embeds and encodes the next. The pieces and the final Sync are one implicit
// transaction, which commits at the Sync, so the write is still one round trip: the pieces before
// the last insert their rows unconditionally (no document to mark: see writeChunks), the last
// marks the document and inserts its rows, and fails when it marked nothing (writePieceSQL),
// which rolls back the earlier pieces; a piece whose document is gone fails on the foreign key.
// When next fails, the connection is closed before the Sync: the server rolls back what it
// received, and next's error is returned as is.
//
// In a transaction's Driver (InTx), the pieces are gathered and written by WriteChunks.
func (d *Driver) WriteChunkPieces(ctx context.Context, docID string, next func() (piece []store.KnowledgeChunk, last bool, err error)) (*store.KnowledgeDocument, error) {
	if d.batch == nil || d.DB.InTransaction() {
		var all []store.KnowledgeChunk
		for {
			piece, last, err := next()
			if err != nil {
				return nil, err
			}
			all = append(all, piece...)
			if last {
				return d.WriteChunks(ctx, store.WriteChunksParams{DocumentID: docID, Chunks: all})
			}
		}
	}
	defer d.df.Reset()
	var vectors int
	defer func() { d.idx.wrote(vectors) }()
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	// A connection closed or left busy (a failure below) is dropped by Release, not reused.
	defer conn.Release()
	c := conn.Conn()
	sd, err := c.Prepare(ctx, writePieceStmt(d.vector), d.writeSQL(true))
	if err != nil {
		return nil, err
	}
	doc, n, err := d.sendPieces(ctx, c, sd, docID, next)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "22012" || pe.Code == "23503") {
		// The last piece marked nothing (writePieceSQL's division by zero), or a piece's rows
		// had no document (a foreign key): indexed already, or gone.
		return nil, d.DB.IndexedOrMissing(ctx, docID)
	}
	if err != nil {
		return nil, mapError(err)
	}
	vectors = n
	return doc, nil
}

// writePieceStmt is the name WriteChunkPieces prepares its statement under on each connection.
func writePieceStmt(vector bool) string {
	if vector {
		return "reelforge_write_piece_half"
	}
	return "reelforge_write_piece"
}

// sendPieces sends one statement a piece that next yields on c, in pipeline mode, then the Sync
// that commits them (see WriteChunkPieces), and reads the answers: the document the last piece
// marked and the vectors written. When next fails, c is closed before any Sync.
func (d *Driver) sendPieces(ctx context.Context, c *pgx.Conn, sd *pgconn.StatementDescription, docID string,
	next func() ([]store.KnowledgeChunk, bool, error)) (*store.KnowledgeDocument, int, error) {
	ts := d.DB.T(d.DB.Now())
	pl := c.PgConn().StartPipeline(ctx)
	var eqb pgx.ExtendedQueryBuilder
	sent, chunks, vectors := 0, 0, 0
	for {
		piece, last, err := next()
		if err == nil {
			chunks += len(piece)
			var a chunkArrays
			for _, ch := range piece {
				a.add(docID, ch, d.vector)
			}
			ids, counts := []string{}, []int32{}
			if last {
				ids, counts = []string{docID}, []int32{int32(chunks)}
			}
			vectors += len(a.half)
			err = eqb.Build(c.TypeMap(), sd, d.chunkArgs(ts, ids, counts, &a))
		}
		if err != nil {
			// Closed with requests sent and no Sync, the connection is closed: the server
			// rolls back the pieces it has.
			pl.Close() //nolint:errcheck // the error is that one
			return nil, 0, err
		}
		pl.SendQueryStatement(sd, eqb.ParamValues, eqb.ParamFormats, eqb.ResultFormats)
		sent++
		if last {
			break
		}
		// On its way: the server writes this piece while next makes the following one.
		if err := pl.Flush(); err != nil {
			return nil, 0, err // the connection is closed
		}
	}
	if err := pl.Sync(); err != nil {
		return nil, 0, err
	}
	doc, err := readPieces(pl, c, sent)
	if cerr := pl.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, 0, err
	}
	if doc == nil {
		return nil, 0, fmt.Errorf("pgstore: chunk pieces: the last piece returned no document")
	}
	return doc, vectors, nil
}

// readPieces reads the answers of the sent pieces, then the Sync's: the document the last piece
// marked.
func readPieces(pl *pgconn.Pipeline, c *pgx.Conn, sent int) (*store.KnowledgeDocument, error) {
	var doc *store.KnowledgeDocument
	for i := 0; i < sent; i++ {
		res, err := pl.GetResults()
		if err != nil {
			return nil, err
		}
		rr, ok := res.(*pgconn.ResultReader)
		if !ok {
			return nil, fmt.Errorf("pgstore: chunk pieces: answer %d is %T", i, res)
		}
		if i < sent-1 {
			if _, err := rr.Close(); err != nil {
				return nil, err
			}
			continue
		}
		rows := pgx.RowsFromResultReader(c.TypeMap(), rr)
		for rows.Next() {
			if doc, err = sqldb.ScanDocument(rows); err != nil {
				rows.Close()
				return nil, err
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	res, err := pl.GetResults()
	if err != nil {
		return nil, err
	}
	if _, ok := res.(*pgconn.PipelineSync); !ok {
		return nil, fmt.Errorf("pgstore: chunk pieces: %T where the Sync's answer was due", res)
	}
	return doc, nil
}
