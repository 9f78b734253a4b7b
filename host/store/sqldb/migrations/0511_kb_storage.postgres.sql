-- Keep the keyword index column inline (compressed) rather than in the TOAST table: the keyword
-- leg reads it for every row it ranks, and an out-of-line value costs a TOAST index lookup and
-- several page reads each time. The text columns, read only for the hits, move out first.
ALTER TABLE knowledge_chunks ALTER COLUMN search_tsv SET STORAGE MAIN;
-- Float bytes do not compress: store the embedding out of line without trying.
ALTER TABLE knowledge_embeddings ALTER COLUMN embedding SET STORAGE EXTERNAL;
-- The search reads the document frequency of common terms and the corpus size from the planner's
-- statistics; refresh them as the corpus grows by 2% rather than the default 10%.
ALTER TABLE knowledge_chunks SET (autovacuum_analyze_scale_factor = 0.02);
