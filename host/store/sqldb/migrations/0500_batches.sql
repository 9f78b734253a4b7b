-- Batches of the named-only batch routes: collected links or started runs, one item each.
CREATE TABLE batches (
    id         TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL,
    project_id TEXT NOT NULL DEFAULT '',
    kind       TEXT NOT NULL,                  -- collect or run
    items      __JSON__ NOT NULL,
    created_at __TS__ NOT NULL
);
CREATE INDEX batches_user ON batches (user_id, created_at);
