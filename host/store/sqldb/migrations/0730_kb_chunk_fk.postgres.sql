-- One foreign key a chunk instead of two. A chunk named its document and, separately, its source
-- (source_id is kept in the chunk for the searches' filters): PostgreSQL checked both for every
-- chunk row written, each check a query of its own with a row lock, about a third of what the
-- foreign-key checks of an ingest cost the server (three a chunk with its embedding's). The key
-- is now the pair (document_id, source_id), which must be a document's id and its source: the
-- chunk's document exists, as before, and the chunk's source is its document's source, which
-- exists by the document's own key (a stronger rule than the two keys, which let a chunk name
-- another source than its document's). Documents never change source, so no row breaks it.
ALTER TABLE knowledge_documents ADD CONSTRAINT knowledge_documents_id_source UNIQUE (id, source_id);
ALTER TABLE knowledge_chunks
    DROP CONSTRAINT knowledge_chunks_source_id_fkey,
    DROP CONSTRAINT knowledge_chunks_document_id_fkey,
    ADD CONSTRAINT knowledge_chunks_document_source_fkey FOREIGN KEY (document_id, source_id)
        REFERENCES knowledge_documents (id, source_id);
