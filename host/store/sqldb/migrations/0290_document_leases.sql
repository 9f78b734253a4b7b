-- A document being ingested is held by the host life ingesting it under a lease that host renews:
-- one whose lease ran out was caught by the stop of that host, and is failed with the reason (a new
-- upload of the same file then ingests it again in place) instead of blocking its hash.
ALTER TABLE knowledge_documents ADD COLUMN held_by TEXT NOT NULL DEFAULT '';
ALTER TABLE knowledge_documents ADD COLUMN lease_until __TS__;
CREATE INDEX IF NOT EXISTS knowledge_documents_held ON knowledge_documents (held_by) WHERE held_by <> '';
