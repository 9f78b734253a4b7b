-- A model call is recorded as in progress before the model is asked (result NULL, the claim making
-- it and how long its hold lasts, by the database's clock): a takeover that executes the same step
-- waits for the answer instead of asking again (issue 38; store.Runs.BeginModelCall).
ALTER TABLE run_model_calls ALTER COLUMN result DROP NOT NULL;
ALTER TABLE run_model_calls ADD COLUMN owner TEXT NOT NULL DEFAULT '';
ALTER TABLE run_model_calls ADD COLUMN held_until TIMESTAMPTZ;
