-- Keep the knowledge rows' identifiers in the row. A chunk row is over the 2 KB past which
-- PostgreSQL starts to shrink a row (its search_tsv alone is near that), and once the text
-- columns are out of line it went on moving the next largest columns out, the 36-byte ids
-- among them: most chunk rows held id, source_id and document_id in the TOAST table, and every
-- embedding row its chunk_id. Each visibility check, join and sort on them then cost a TOAST
-- index lookup; a search at 100k chunks made some 20,000 such page reads. MAIN keeps a column
-- in the row unless the row cannot fit a page at all. It applies to rows written from now on
-- (rows already stored keep their layout until they are written again, as by a reindex).
ALTER TABLE knowledge_chunks ALTER COLUMN id SET STORAGE MAIN, ALTER COLUMN source_id SET STORAGE MAIN,
    ALTER COLUMN document_id SET STORAGE MAIN, ALTER COLUMN heading SET STORAGE MAIN,
    ALTER COLUMN embedding_model SET STORAGE MAIN;
ALTER TABLE knowledge_embeddings ALTER COLUMN chunk_id SET STORAGE MAIN, ALTER COLUMN model SET STORAGE MAIN;
