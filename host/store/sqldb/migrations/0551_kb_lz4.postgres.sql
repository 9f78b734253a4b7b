-- Compress the chunk's text columns with lz4 instead of pglz where the server has it (PostgreSQL
-- 14 and later, built with lz4, as Debian's and the official images are). pglz was about half
-- of what the server spent storing a chunk (its text, segmented text and keyword index value are
-- each near or over the 2 KB past which PostgreSQL compresses), and the keyword leg decompresses
-- search_tsv for every row it ranks; lz4 does both several times faster, for slightly larger
-- values. Values already stored stay as they are and read as before. A server without lz4 keeps
-- pglz.
DO $$
BEGIN
    ALTER TABLE knowledge_chunks ALTER COLUMN chunk_text SET COMPRESSION lz4,
        ALTER COLUMN search_text SET COMPRESSION lz4, ALTER COLUMN search_tsv SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported OR syntax_error OR invalid_parameter_value THEN
    RAISE NOTICE 'lz4 compression unavailable, keeping pglz: %', SQLERRM;
END
$$;
