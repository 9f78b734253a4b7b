-- Vectors of the HNSW index in half precision, and the index written by a background worker.
--
-- embedding_vector becomes halfvec(1536) (pgvector 0.7 and later): 3 KB a row instead of 6, so
-- twice the rows a page and half the bytes a distance reads; the dimension stays SPEC.md's 1536.
-- A database made before, whose column is vector(1536), is converted here (the HNSW index on it is
-- dropped first; the driver's setup builds the halfvec index over the converted rows at the same
-- start). The column itself is made by the setup (pgstore.prepare) when the extension can be
-- created, so a database without pgvector has nothing to convert.
--
-- vector_indexed: whether the row is in the HNSW index, which is partial (WHERE vector_indexed).
-- An ingest writes its rows with FALSE and does not pay the graph insert; the driver's indexer
-- sets it later, and a search scores the rows still FALSE by an exact scan of that small set.
-- Rows already stored are in the index: TRUE for them, FALSE for the rows written from now on.
ALTER TABLE knowledge_embeddings ADD COLUMN vector_indexed BOOLEAN NOT NULL DEFAULT TRUE;
ALTER TABLE knowledge_embeddings ALTER COLUMN vector_indexed SET DEFAULT FALSE;
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()
            AND table_name = 'knowledge_embeddings' AND column_name = 'embedding_vector' AND udt_name = 'vector') THEN
        DROP INDEX IF EXISTS knowledge_embeddings_hnsw_m8;
        DROP INDEX IF EXISTS knowledge_embeddings_hnsw;
        ALTER TABLE knowledge_embeddings ALTER COLUMN embedding_vector TYPE public.halfvec(1536)
            USING embedding_vector::public.halfvec(1536);
    END IF;
END
$$;
