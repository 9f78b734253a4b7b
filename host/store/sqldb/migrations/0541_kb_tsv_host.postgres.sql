-- The host writes search_tsv itself: the lexemes and positions that to_tsvector('simple',
-- search_text) gives, sent in binary (pgstore.searchVector). PostgreSQL's text-search parser
-- cost about 0.1 ms a chunk, most of what the server spent storing one. The column keeps its
-- meaning; a writer that leaves it NULL (a host of an older version during an upgrade) gets it
-- computed here, and so does a change of search_text that does not also set it.
ALTER TABLE knowledge_chunks ALTER COLUMN search_tsv DROP EXPRESSION;
CREATE FUNCTION knowledge_chunks_tsv() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.search_tsv := to_tsvector('simple', NEW.search_text);
    RETURN NEW;
END
$$;
CREATE TRIGGER knowledge_chunks_tsv_insert BEFORE INSERT ON knowledge_chunks
    FOR EACH ROW WHEN (NEW.search_tsv IS NULL) EXECUTE FUNCTION knowledge_chunks_tsv();
CREATE TRIGGER knowledge_chunks_tsv_update BEFORE UPDATE OF search_text ON knowledge_chunks
    FOR EACH ROW WHEN (NEW.search_text IS DISTINCT FROM OLD.search_text AND NEW.search_tsv IS NOT DISTINCT FROM OLD.search_tsv)
    EXECUTE FUNCTION knowledge_chunks_tsv();
