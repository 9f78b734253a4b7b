-- SQLite keeps the keyword index in an FTS5 table over the segmented text, keyed by the chunk's rowid.
CREATE VIRTUAL TABLE knowledge_chunks_fts USING fts5 (search_text, content='knowledge_chunks', content_rowid='rowid', tokenize='unicode61');
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
