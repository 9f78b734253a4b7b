-- The number of chunks holding each keyword term, read from the FTS5 index itself: the keyword
-- leg ranks the rarest query terms first and leaves out terms so common that ranking every row
-- holding them would cost more than it tells (see sqlitestore.KeywordCandidates).
CREATE VIRTUAL TABLE knowledge_chunks_fts_vocab USING fts5vocab(knowledge_chunks_fts, 'row');
