-- The model's answers to a run's calls, by attempt and call key (a digest of the request and its
-- occurrence in the execution): a step executed again because its outcome could not be recorded
-- (the database failed under it) reads back what the model said instead of asking again (issue 38).
CREATE TABLE IF NOT EXISTS run_model_calls (
    run_id     TEXT NOT NULL REFERENCES runs(run_id),
    attempt    INTEGER NOT NULL,
    call_key   TEXT NOT NULL,
    result     __JSON__ NOT NULL,
    created_at __TS__ NOT NULL,
    PRIMARY KEY (run_id, attempt, call_key)
);
