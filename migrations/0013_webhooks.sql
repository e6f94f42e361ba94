-- Run webhooks go through the outbox (channel 'webhook'), tried again with backoff: a delivery claims
-- the message until `next_attempt_at` (so a process that dies mid-delivery leaves it to be retried).
ALTER TABLE outbox ADD COLUMN attempts integer NOT NULL DEFAULT 0;
ALTER TABLE outbox ADD COLUMN next_attempt_at timestamptz;
ALTER TABLE outbox ADD COLUMN last_error text;
CREATE INDEX outbox_webhooks_due ON outbox (next_attempt_at, created_at)
    WHERE channel = 'webhook' AND status = 'pending';
