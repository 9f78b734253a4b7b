-- A request holding an Idempotency-Key is served by a host life under a lease that host renews: a
-- key whose holder died is released, so the client's retry proceeds instead of getting 409 for 24 h.
ALTER TABLE idempotency_keys ADD COLUMN held_by TEXT NOT NULL DEFAULT '';
ALTER TABLE idempotency_keys ADD COLUMN lease_until __TS__;
