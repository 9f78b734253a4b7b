-- A cheaper keyword index to write, rebuilt from the stored segmented text. Writing the index was
-- about half of what ingest spent in SQLite:
--   - tokenize='ascii': search_text is already segmented, case-folded and normalised by the host
--     (kb/segment), its tokens separated by single spaces and made of letters and digits only, so
--     splitting at ASCII separators gives back exactly those tokens; unicode61 spent its time
--     folding and classifying every character again.
--   - automerge 8: FTS5 writes a segment per transaction (an ingested document) and merges
--     segments of a level once there are 8 of them, not 4, so each posting is rewritten about
--     half as often. A search reads a few more segments (BenchmarkSearchSQLite; BENCHMARKS.md).
-- detail=none, which would drop positions, was tried and left: bm25() then re-tokenizes each
-- matching row to count its terms, and the keyword leg ranks up to 2000 rows with it.
DROP TABLE knowledge_chunks_fts_vocab;
DROP TRIGGER knowledge_chunks_ai;
DROP TRIGGER knowledge_chunks_ad;
DROP TRIGGER knowledge_chunks_au;
DROP TABLE knowledge_chunks_fts;
CREATE VIRTUAL TABLE knowledge_chunks_fts USING fts5 (search_text, content='knowledge_chunks', content_rowid='rowid',
    tokenize='ascii');
CREATE TRIGGER knowledge_chunks_ai AFTER INSERT ON knowledge_chunks BEGIN
    INSERT INTO knowledge_chunks_fts (rowid, search_text) VALUES (new.rowid, new.search_text);
END;
CREATE TRIGGER knowledge_chunks_ad AFTER DELETE ON knowledge_chunks BEGIN
    INSERT INTO knowledge_chunks_fts (knowledge_chunks_fts, rowid, search_text) VALUES ('delete', old.rowid, old.search_text);
END;
CREATE TRIGGER knowledge_chunks_au AFTER UPDATE OF search_text ON knowledge_chunks BEGIN
    INSERT INTO knowledge_chunks_fts (knowledge_chunks_fts, rowid, search_text) VALUES ('delete', old.rowid, old.search_text);
    INSERT INTO knowledge_chunks_fts (rowid, search_text) VALUES (new.rowid, new.search_text);
END;
INSERT INTO knowledge_chunks_fts (knowledge_chunks_fts, rank) VALUES ('automerge', 8);
INSERT INTO knowledge_chunks_fts (knowledge_chunks_fts) VALUES ('rebuild');
CREATE VIRTUAL TABLE knowledge_chunks_fts_vocab USING fts5vocab(knowledge_chunks_fts, 'row');
