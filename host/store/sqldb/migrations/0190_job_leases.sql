-- A job whose work runs on a host (a local render, speech or link parse) is held by that host's
-- life under a lease it renews; a job handed to an external executor is held by nobody ('') and
-- waits for its callback until timeout_at. A held job whose lease ran out was interrupted.
ALTER TABLE jobs ADD COLUMN held_by TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN lease_until __TS__;
CREATE INDEX IF NOT EXISTS jobs_held ON jobs (held_by) WHERE held_by <> '';
CREATE INDEX IF NOT EXISTS runs_claimed ON runs (claimed_by) WHERE claimed_by <> '';
