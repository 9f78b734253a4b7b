-- events: the lease of a claimed outbox event, when it was last attempted, and the subscription
-- end date behind subscription.expiring.
ALTER TABLE outbox ADD COLUMN claim_token TEXT NOT NULL DEFAULT '';
ALTER TABLE outbox ADD COLUMN last_attempt_at __TS__;
ALTER TABLE users ADD COLUMN subscription_expires_at __TS__;
CREATE INDEX users_subscription ON users (subscription_expires_at);
