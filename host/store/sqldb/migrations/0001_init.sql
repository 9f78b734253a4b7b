-- The initial schema: a table for every record of SPEC.md "Resources and their fields".
-- Written once for both drivers: __JSON__, __TS__ and __BLOB__ become jsonb/timestamptz/bytea on
-- PostgreSQL and TEXT/TEXT/BLOB on SQLite (times are stored there as fixed-width UTC text, so they
-- sort). Ids are UUID strings. Companion files 0001_init.<driver>.sql add what only one driver has.

CREATE TABLE users (
    id            TEXT PRIMARY KEY,
    email         TEXT NOT NULL UNIQUE,          -- stored lower-cased: emails are case-insensitive
    username      TEXT NOT NULL,
    password_hash TEXT NOT NULL,
    role          TEXT NOT NULL DEFAULT 'free_user',
    avatar_url    TEXT NOT NULL DEFAULT '',
    created_at    __TS__ NOT NULL,
    updated_at    __TS__ NOT NULL,
    is_deleted    BOOLEAN NOT NULL DEFAULT FALSE
);

CREATE TABLE refresh_tokens (
    id          TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL REFERENCES users(id),
    family_id   TEXT NOT NULL,
    token_hash  TEXT NOT NULL UNIQUE,
    expires_at  __TS__ NOT NULL,
    revoked_at  __TS__,
    created_at  __TS__ NOT NULL
);
CREATE INDEX refresh_tokens_family ON refresh_tokens (family_id);

CREATE TABLE projects (
    id                 TEXT PRIMARY KEY,
    user_id            TEXT NOT NULL REFERENCES users(id),
    name               TEXT NOT NULL,
    description        TEXT NOT NULL DEFAULT '',
    status             TEXT NOT NULL DEFAULT 'active',
    workflow_preset_id TEXT NOT NULL DEFAULT '',
    blueprint          __JSON__,
    created_at         __TS__ NOT NULL,
    updated_at         __TS__ NOT NULL,
    is_deleted         BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE INDEX projects_user ON projects (user_id, created_at);

-- Dated strategy tasks of a project's blueprint (the scheduler reads them).
CREATE TABLE strategy_tasks (
    id          TEXT PRIMARY KEY,
    project_id  TEXT NOT NULL REFERENCES projects(id),
    workflow_id TEXT NOT NULL,
    summary     TEXT NOT NULL DEFAULT '',
    platform    TEXT NOT NULL DEFAULT '',
    inputs      __JSON__,
    due_date    TEXT NOT NULL,                   -- YYYY-MM-DD
    priority    TEXT NOT NULL DEFAULT 'medium',
    created_at  __TS__ NOT NULL
);
CREATE INDEX strategy_tasks_due ON strategy_tasks (due_date, project_id);

-- auto_runs of a project: one mark per triggered strategy task.
CREATE TABLE project_auto_runs (
    project_id       TEXT NOT NULL REFERENCES projects(id),
    strategy_task_id TEXT NOT NULL,
    run_id           TEXT NOT NULL,
    workflow_id      TEXT NOT NULL,
    status           TEXT NOT NULL,              -- running, completed, failed
    trace            __JSON__,
    started_at       __TS__ NOT NULL,
    completed_at     __TS__,
    PRIMARY KEY (project_id, strategy_task_id)
);

CREATE TABLE tasks (
    id              TEXT PRIMARY KEY,
    project_id      TEXT NOT NULL REFERENCES projects(id),
    user_id         TEXT NOT NULL,
    type            TEXT NOT NULL,
    status          TEXT NOT NULL DEFAULT 'pending',
    input_params    __JSON__ NOT NULL,
    output_data     __JSON__,
    error_message   TEXT NOT NULL DEFAULT '',
    retry_count     INTEGER NOT NULL DEFAULT 0,
    max_retries     INTEGER NOT NULL DEFAULT 3,
    run_id          TEXT NOT NULL DEFAULT '',
    next_attempt_at __TS__,
    created_at      __TS__ NOT NULL,
    updated_at      __TS__ NOT NULL,
    completed_at    __TS__
);
CREATE INDEX tasks_project ON tasks (project_id, created_at);
CREATE INDEX tasks_status ON tasks (status, next_attempt_at);

CREATE TABLE runs (
    run_id          TEXT PRIMARY KEY,
    workflow_id     TEXT NOT NULL,
    user_id         TEXT NOT NULL,
    project_id      TEXT NOT NULL DEFAULT '',
    status          TEXT NOT NULL,
    progress        DOUBLE PRECISION NOT NULL DEFAULT 0,
    current_step    TEXT NOT NULL DEFAULT '',
    inputs          __JSON__ NOT NULL,
    outputs         __JSON__,
    user_context    __JSON__ NOT NULL,
    project_context __JSON__,
    trigger         TEXT NOT NULL DEFAULT 'api',
    triggered_by    TEXT NOT NULL DEFAULT '',
    engine          TEXT NOT NULL DEFAULT 'node',
    degraded        TEXT NOT NULL DEFAULT '',    -- why it ran on a fallback engine, if it did
    error           __JSON__,
    awaiting        __JSON__,
    resume_input    __JSON__,
    attempt         INTEGER NOT NULL DEFAULT 0,
    claimed_by      TEXT NOT NULL DEFAULT '',
    lease_until     __TS__,
    created_at      __TS__ NOT NULL,
    updated_at      __TS__ NOT NULL,
    started_at      __TS__,
    completed_at    __TS__
);
CREATE INDEX runs_user ON runs (user_id, created_at);
CREATE INDEX runs_status ON runs (status, lease_until);

CREATE TABLE trace_steps (
    run_id     TEXT NOT NULL REFERENCES runs(run_id),
    step_id    TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    status     TEXT NOT NULL,
    step       __JSON__ NOT NULL,
    updated_at __TS__ NOT NULL,
    PRIMARY KEY (run_id, step_id)
);

CREATE TABLE jobs (
    job_id                TEXT PRIMARY KEY,
    run_id                TEXT NOT NULL,
    step_id               TEXT NOT NULL DEFAULT '',
    type                  TEXT NOT NULL,
    status                TEXT NOT NULL,
    request               __JSON__,
    callback              __JSON__,
    result                __JSON__,
    error                 __JSON__,
    retry_count           INTEGER NOT NULL DEFAULT 0,
    max_retries           INTEGER NOT NULL DEFAULT 0,
    created_at            __TS__ NOT NULL,
    updated_at            __TS__ NOT NULL,
    timeout_at            __TS__ NOT NULL,
    next_attempt_at       __TS__,
    dispatched_at         __TS__,
    external_completed_at __TS__,
    resolved_at           __TS__
);
CREATE INDEX jobs_run ON jobs (run_id);
CREATE INDEX jobs_status ON jobs (status, timeout_at);

CREATE TABLE assets (
    id                TEXT PRIMARY KEY,
    user_id           TEXT NOT NULL,
    project_id        TEXT NOT NULL DEFAULT '',
    file_path         TEXT NOT NULL,
    file_type         TEXT NOT NULL,              -- video, image, audio
    mime_type         TEXT NOT NULL DEFAULT '',
    file_size         BIGINT NOT NULL DEFAULT 0,
    file_url          TEXT NOT NULL DEFAULT '',
    original_name     TEXT NOT NULL DEFAULT '',
    metadata          __JSON__,
    source_task_id    TEXT NOT NULL DEFAULT '',
    related_corpus_id TEXT NOT NULL DEFAULT '',
    tags              __JSON__,
    created_at        __TS__ NOT NULL,
    is_deleted        BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE INDEX assets_user ON assets (user_id, created_at);

-- User corpus: inspiration notes and corpus records are the same table.
CREATE TABLE corpus (
    id               TEXT PRIMARY KEY,
    user_id          TEXT NOT NULL,
    project_id       TEXT NOT NULL DEFAULT '',
    inspiration_type TEXT NOT NULL DEFAULT 'collection', -- collection, trend
    corpus_type      TEXT NOT NULL DEFAULT 'article',    -- article, script, quote
    content_type     TEXT NOT NULL DEFAULT 'text',       -- text, image, video
    title            TEXT NOT NULL DEFAULT '',
    content          TEXT NOT NULL DEFAULT '',
    ai_summary       TEXT NOT NULL DEFAULT '',
    ai_tags          __JSON__,
    tags             __JSON__,
    source_platform  TEXT NOT NULL DEFAULT '',
    source_url       TEXT NOT NULL DEFAULT '',
    media_urls       __JSON__,
    metadata         __JSON__,
    status           TEXT NOT NULL DEFAULT 'unread',     -- unread, read, archived
    usage_count      INTEGER NOT NULL DEFAULT 0,
    is_featured      BOOLEAN NOT NULL DEFAULT FALSE,
    is_deleted       BOOLEAN NOT NULL DEFAULT FALSE,
    created_at       __TS__ NOT NULL,
    updated_at       __TS__ NOT NULL
);
CREATE INDEX corpus_user ON corpus (user_id, created_at);

CREATE TABLE capture_tasks (
    id                TEXT PRIMARY KEY,
    user_id           TEXT NOT NULL,
    project_id        TEXT NOT NULL DEFAULT '',
    title             TEXT NOT NULL DEFAULT '',
    description       TEXT NOT NULL DEFAULT '',
    task_type         TEXT NOT NULL DEFAULT 'shoot',
    status            TEXT NOT NULL DEFAULT 'pending',
    reference_content __JSON__,
    created_at        __TS__ NOT NULL,
    updated_at        __TS__ NOT NULL
);

CREATE TABLE knowledge_sources (
    id          TEXT PRIMARY KEY,
    created_by  TEXT NOT NULL,
    project_id  TEXT NOT NULL DEFAULT '',        -- '' when the source has no project
    name        TEXT NOT NULL,
    visibility  TEXT NOT NULL DEFAULT 'project', -- private, project, org
    scope       TEXT NOT NULL DEFAULT 'org',     -- org, project
    version     INTEGER NOT NULL DEFAULT 1,
    meta        __JSON__,
    created_at  __TS__ NOT NULL,
    updated_at  __TS__ NOT NULL,
    UNIQUE (created_by, project_id, name)
);

CREATE TABLE knowledge_documents (
    id            TEXT PRIMARY KEY,
    source_id     TEXT NOT NULL REFERENCES knowledge_sources(id),
    user_id       TEXT NOT NULL,
    title         TEXT NOT NULL DEFAULT '',
    filename      TEXT NOT NULL,
    file_hash     TEXT NOT NULL,
    file_size     BIGINT NOT NULL DEFAULT 0,
    file_url      TEXT NOT NULL DEFAULT '',
    mime_type     TEXT NOT NULL DEFAULT '',
    parse_status  TEXT NOT NULL DEFAULT 'uploading', -- uploading, parsing, indexed, failed
    error_message TEXT NOT NULL DEFAULT '',
    chunk_count   INTEGER NOT NULL DEFAULT 0,
    metadata      __JSON__,
    created_at    __TS__ NOT NULL,
    updated_at    __TS__ NOT NULL
);
CREATE INDEX knowledge_documents_hash ON knowledge_documents (source_id, file_hash);

CREATE TABLE knowledge_chunks (
    id              TEXT PRIMARY KEY,
    source_id       TEXT NOT NULL REFERENCES knowledge_sources(id),
    document_id     TEXT NOT NULL REFERENCES knowledge_documents(id),
    chunk_index     INTEGER NOT NULL,
    chunk_text      TEXT NOT NULL,
    heading         TEXT NOT NULL DEFAULT '',
    token_count     INTEGER NOT NULL DEFAULT 0,
    search_text     TEXT NOT NULL DEFAULT '',     -- segmented form the keyword index is built on
    metadata        __JSON__,
    embedding_model TEXT NOT NULL DEFAULT '',
    created_at      __TS__ NOT NULL
);
CREATE INDEX knowledge_chunks_document ON knowledge_chunks (document_id, chunk_index);
CREATE INDEX knowledge_chunks_source ON knowledge_chunks (source_id);

CREATE TABLE knowledge_embeddings (
    chunk_id   TEXT NOT NULL REFERENCES knowledge_chunks(id),
    model      TEXT NOT NULL,
    embedding  __BLOB__ NOT NULL,                  -- little-endian float32s
    created_at __TS__ NOT NULL,
    PRIMARY KEY (chunk_id, model)
);

CREATE TABLE knowledge_queries (
    id              TEXT PRIMARY KEY,
    user_id         TEXT NOT NULL,
    project_id      TEXT NOT NULL DEFAULT '',
    mode            TEXT NOT NULL,               -- ask, search
    query_text      TEXT NOT NULL,
    top_k           INTEGER NOT NULL,
    latency_ms      DOUBLE PRECISION NOT NULL,
    results         __JSON__,
    answer_text     TEXT NOT NULL DEFAULT '',
    citations       __JSON__,
    cited           BOOLEAN NOT NULL DEFAULT FALSE,
    feedback_rating INTEGER,
    feedback_notes  TEXT NOT NULL DEFAULT '',
    created_at      __TS__ NOT NULL
);
CREATE INDEX knowledge_queries_user ON knowledge_queries (user_id, mode, created_at);

CREATE TABLE facts (
    id         TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL,
    key        TEXT NOT NULL,
    value      TEXT NOT NULL,
    created_at __TS__ NOT NULL,
    updated_at __TS__ NOT NULL,
    UNIQUE (user_id, key)
);

CREATE TABLE outbox (
    id              TEXT PRIMARY KEY,
    event           TEXT NOT NULL,
    payload         __JSON__ NOT NULL,
    user_id         TEXT NOT NULL DEFAULT '',
    project_id      TEXT NOT NULL DEFAULT '',
    status          TEXT NOT NULL DEFAULT 'pending', -- pending, delivered, dead
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at __TS__ NOT NULL,
    last_error      TEXT NOT NULL DEFAULT '',
    created_at      __TS__ NOT NULL,
    delivered_at    __TS__
);
CREATE INDEX outbox_due ON outbox (status, next_attempt_at);

CREATE TABLE idempotency_keys (
    user_id      TEXT NOT NULL,
    key          TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    status_code  INTEGER NOT NULL DEFAULT 0,
    content_type TEXT NOT NULL DEFAULT '',
    body         __BLOB__,
    created_at   __TS__ NOT NULL,
    PRIMARY KEY (user_id, key)
);
