-- On the pgvector path an embedding of the halfvec column's dimension is stored only there: the
-- float32 bytes beside it (3.7 to 6 KB a chunk, out of line) doubled what an ingest wrote and
-- logged, and only the in-memory path read them, which now reads the halfvec column where the bytes
-- are NULL (pgstore.Driver.Embeddings). Rows written before keep both.
ALTER TABLE knowledge_embeddings ALTER COLUMN embedding DROP NOT NULL;
