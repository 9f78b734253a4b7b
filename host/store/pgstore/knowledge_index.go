package pgstore

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/pgvector/pgvector-go"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/sqldb"
)

// WriteChunks implements store.Knowledge: writeChunks of one document, which returns the document
// from the statement that marks it indexed (one round trip fewer than reading it again).
func (d *Driver) WriteChunks(ctx context.Context, p store.WriteChunksParams) (*store.KnowledgeDocument, error) {
	docs, err := d.writeChunks(ctx, []store.WriteChunksParams{p})
	if err != nil {
		return nil, err
	}
	return docs[0], nil
}

// WriteChunksBatch implements store.Knowledge through writeChunks.
func (d *Driver) WriteChunksBatch(ctx context.Context, docs []store.WriteChunksParams) ([]*store.KnowledgeDocument, error) {
	return d.writeChunks(ctx, docs)
}

// writeChunks writes the chunks of all the documents (with their keyword index value,
// searchVector), their embeddings and the documents' indexed status with one statement
// (writeChunksSQL), and returns the documents as it left them, in no particular order: three round
// trips (BEGIN, the statement, COMMIT) whatever the number of documents, where a COPY of each
// table took two (its column description and the copy) and the status a third. The statement of
// one document is a transaction by itself (it writes all or nothing, see writeChunksSQL), so one
// document a call takes one round trip. The vectors go into the HNSW index later (indexer.go):
// until then the search scans them exactly.
func (d *Driver) writeChunks(ctx context.Context, docs []store.WriteChunksParams) ([]*store.KnowledgeDocument, error) {
	defer d.df.Reset()
	var vectors, chunks int
	defer func() { d.idx.wrote(vectors, chunks) }()
	inTx := d.DB.WithTx
	if len(docs) == 1 {
		inTx = func(_ context.Context, fn func(tx *sqldb.DB) error) error { return fn(d.DB) }
	}
	var marked []*store.KnowledgeDocument
	err := inTx(ctx, func(tx *sqldb.DB) error {
		now := tx.Now()
		var a chunkArrays
		ids, counts := make([]string, len(docs)), make([]int32, len(docs))
		for i, p := range docs {
			ids[i], counts[i] = p.DocumentID, int32(len(p.Chunks))
			for _, c := range p.Chunks {
				a.add(p.DocumentID, c, d.vector)
			}
		}
		args := []any{store.DocIndexed, tx.T(now), ids, counts, a.id, a.source, a.doc, a.index, a.text, a.heading, a.tokens, a.search,
			a.tsv, a.meta, a.model, a.byteID, a.byteModel, a.bytes}
		stmts := [2]string{writeChunksSQL, writeChunksHalfSQL}
		if len(docs) == 1 {
			stmts = [2]string{writeChunkSQL, writeChunkHalfSQL}
		}
		q := stmts[0]
		if d.vector {
			q, args = stmts[1], append(args, a.halfID, a.halfModel, a.half)
		}
		marked = marked[:0] // a retried transaction starts again
		err := sqldb.QueryEach(ctx, tx, q, args, func(r sqldb.Row) error {
			doc, err := sqldb.ScanDocument(r)
			marked = append(marked, doc)
			return err
		})
		if err != nil {
			return mapError(err)
		}
		if len(marked) != len(docs) {
			// Nothing was written: the statement inserts only when every document was marked.
			if len(docs) == 1 {
				return tx.IndexedOrMissing(ctx, ids[0]) // indexed already, or gone
			}
			// A document indexed already (or gone): the batch is a conflict (the caller writes such
			// a batch one document at a time to learn which).
			return fmt.Errorf("%w: %d of the %d documents of the batch are indexed already or gone", store.ErrConflict, len(docs)-len(marked), len(docs))
		}
		vectors, chunks = len(a.half), len(a.id)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return marked, nil
}

// chunkArrays are the columns of the chunk and embedding rows of one WriteChunksBatch, as the
// arrays writeChunksSQL unnests. An embedding goes either in the float32 bytes or in the halfvec
// column (inHalfColumn), so each has its own rows: an array of halfvec values with a NULL in it
// would make pgx encode every element as text.
type chunkArrays struct {
	id, source, doc, text, heading, search, meta, model []string
	index, tokens                                       []int32
	tsv                                                 []pgtype.TSVector
	byteID, byteModel                                   []string
	bytes                                               [][]byte
	halfID, halfModel                                   []string
	half                                                halfArray
}

// add appends chunk c of document doc; vector: the pgvector path, with the halfvec column.
func (a *chunkArrays) add(doc string, c store.KnowledgeChunk, vector bool) {
	a.id, a.source, a.doc = append(a.id, c.ID), append(a.source, c.SourceID), append(a.doc, doc)
	a.index, a.text, a.heading = append(a.index, int32(c.Index)), append(a.text, c.Text), append(a.heading, c.Heading)
	a.tokens, a.search, a.tsv = append(a.tokens, int32(c.TokenCount)), append(a.search, c.SearchText), append(a.tsv, searchVector(c.SearchText))
	a.meta, a.model = append(a.meta, cmp.Or(string(c.Metadata), "{}")), append(a.model, c.EmbeddingModel)
	if c.Embedding == nil {
		return
	}
	if vector && inHalfColumn(c.Embedding) {
		a.halfID, a.halfModel, a.half = append(a.halfID, c.ID), append(a.halfModel, c.EmbeddingModel), append(a.half, c.Embedding)
	} else {
		a.byteID, a.byteModel, a.bytes = append(a.byteID, c.ID), append(a.byteModel, c.EmbeddingModel), append(a.bytes, sqldb.EncodeVector(c.Embedding))
	}
}

// writeChunksSQL marks the documents ($3, with their chunk counts $4) indexed and, only when it
// marked every one of them, inserts their chunks and embeddings from the arrays of chunkArrays: the
// data-modifying CTEs see the same snapshot, and the inserts are conditioned on the update's
// count, so a document indexed already (or deleted) leaves nothing written. It returns the
// documents it marked (sqldb.DocCols). writeChunksHalfSQL also inserts the halfvec rows ($19 to
// $21). writeChunkSQL and writeChunkHalfSQL are their forms for one document (see writeChunks).
var (
	writeChunksSQL, writeChunksHalfSQL = writeChunks(false, false), writeChunks(true, false)
	writeChunkSQL, writeChunkHalfSQL   = writeChunks(false, true), writeChunks(true, true)
)

// writeChunks is the statement of writeChunksSQL; one: the form of a single document, which names
// it by the first element of $3 instead of joining knowledge_documents with the unnested arrays:
// the planner estimates an unnest at 10 rows, and pgx's prepared statement runs a generic plan made
// while the table was small, so the join was a hash join over a sequential scan of every document
// at each call (TestIngestPlansUseIndexes); the element is one primary-key lookup at any size.
func writeChunks(half, one bool) string {
	docs := `unnest($3::text[], $4::int[]) AS x(id, n)`
	if one {
		docs = `(SELECT ($3::text[])[1] AS id, ($4::int[])[1] AS n) x`
	}
	cols, halfCol, halfRows := "chunk_id, model, embedding", "", ""
	if half {
		cols, halfCol = cols+", embedding_vector", "NULL::public.halfvec, "
		halfRows = `
			UNION ALL SELECT h.id, h.model, NULL, h.v, $2 FROM unnest($19::text[], $20::text[], $21::public.halfvec[]) AS h(id, model, v)`
	}
	byteRows := `SELECT b.id, b.model, b.v, ` + halfCol + `$2 FROM unnest($16::text[], $17::text[], $18::bytea[]) AS b(id, model, v)`
	return `WITH u AS (
			UPDATE knowledge_documents d SET parse_status = $1, error_message = '', chunk_count = x.n, updated_at = $2
			FROM ` + docs + ` WHERE d.id = x.id AND d.parse_status <> $1 RETURNING ` + sqldb.DocCols + `),
		ok AS (SELECT COUNT(*) = cardinality($3::text[]) AS whole FROM u),
		c AS (INSERT INTO knowledge_chunks (id, source_id, document_id, chunk_index, chunk_text, heading, token_count, search_text,
				search_tsv, metadata, embedding_model, created_at)
			SELECT r.id, r.src, r.doc, r.idx, r.txt, r.head, r.toks, r.st, r.tsv, r.meta::jsonb, r.model, $2
			FROM unnest($5::text[], $6::text[], $7::text[], $8::int[], $9::text[], $10::text[], $11::int[], $12::text[],
				$13::tsvector[], $14::text[], $15::text[]) AS r(id, src, doc, idx, txt, head, toks, st, tsv, meta, model)
			WHERE (SELECT whole FROM ok)),
		e AS (INSERT INTO knowledge_embeddings (` + cols + `, created_at)
			SELECT * FROM (` + byteRows + halfRows + `) v WHERE (SELECT whole FROM ok))
		SELECT * FROM u`
}

// Embeddings implements store.Knowledge: where the table has the halfvec column, a vector the
// pgvector path wrote only there (inHalfColumn) is read from it, converted to float32.
func (d *Driver) Embeddings(ctx context.Context, refs []store.EmbeddingRef) (map[string][]float32, error) {
	if !d.half {
		return d.DB.Embeddings(ctx, refs)
	}
	return d.DB.EmbeddingsWith(ctx, refs, `embedding_vector::public.vector::real[]`)
}

// AddEmbeddings implements store.Knowledge.
func (d *Driver) AddEmbeddings(ctx context.Context, model string, vecs map[string][]float32) error {
	err := d.DB.AddEmbeddingsWith(ctx, model, vecs, d.putEmbedding)
	if err == nil && d.vector {
		d.idx.wrote(len(vecs), 0)
	}
	return err
}

func (d *Driver) putEmbedding(ctx context.Context, tx *sqldb.DB, rows []sqldb.EmbeddingRow, now time.Time) error {
	if !d.vector {
		return sqldb.InsertEmbeddings(ctx, tx, rows, now)
	}
	ts := tx.T(now)
	return tx.InsertRows(ctx, `INSERT INTO knowledge_embeddings (chunk_id, model, embedding, embedding_vector, created_at)`, len(rows),
		func(i int, a *sqldb.Args) string {
			r := rows[i]
			var bytes, half any // one of the two, the other NULL
			if inHalfColumn(r.Vector) {
				half = pgvector.NewHalfVector(r.Vector)
			} else {
				bytes = sqldb.EncodeVector(r.Vector)
			}
			return "(" + a.Add(r.ChunkID) + ", " + a.Add(r.Model) + ", " + a.Add(bytes) + "::bytea, " +
				a.Add(half) + "::halfvec, " + a.Add(ts) + ")"
		})
}
