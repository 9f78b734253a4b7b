-- Service credentials (API keys): long-lived, revocable bearer keys for automation tools and
-- operators. Only the SHA-256 of a key is stored; the key itself is shown once, at creation.
CREATE TABLE api_keys (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL,
    scope        TEXT NOT NULL,
    key_hash     TEXT NOT NULL UNIQUE,
    prefix       TEXT NOT NULL,
    user_id      TEXT NOT NULL DEFAULT '',
    created_by   TEXT NOT NULL DEFAULT '',
    created_at   __TS__ NOT NULL,
    last_used_at __TS__,
    revoked_at   __TS__
);
-- One live key per name, so a key's name (the runs' triggered_by) names one credential.
CREATE UNIQUE INDEX api_keys_live_name ON api_keys (name) WHERE revoked_at IS NULL;
