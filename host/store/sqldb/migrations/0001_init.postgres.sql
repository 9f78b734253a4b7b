-- PostgreSQL keeps the keyword index as a generated tsvector over the segmented text.
ALTER TABLE knowledge_chunks ADD COLUMN search_tsv tsvector
    GENERATED ALWAYS AS (to_tsvector('simple', search_text)) STORED;
CREATE INDEX knowledge_chunks_tsv ON knowledge_chunks USING gin (search_tsv);
