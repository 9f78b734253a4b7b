-- A model call is recorded as in progress before the model is asked (result NULL, the claim making
-- it and how long its hold lasts): a takeover that executes the same step waits for the answer
-- instead of asking again (issue 38; store.Runs.BeginModelCall). SQLite cannot drop a NOT NULL:
-- the table is made anew.
CREATE TABLE run_model_calls_new (
    run_id     TEXT NOT NULL REFERENCES runs(run_id),
    attempt    INTEGER NOT NULL,
    call_key   TEXT NOT NULL,
    result     TEXT,
    owner      TEXT NOT NULL DEFAULT '',
    held_until TEXT,
    created_at TEXT NOT NULL,
    PRIMARY KEY (run_id, attempt, call_key)
);
INSERT INTO run_model_calls_new (run_id, attempt, call_key, result, created_at)
    SELECT run_id, attempt, call_key, result, created_at FROM run_model_calls;
DROP TABLE run_model_calls;
ALTER TABLE run_model_calls_new RENAME TO run_model_calls;
