-- Rate-limit counters shared by every process of a deployment (requests and runs per tenant, failed
-- console sign-ins per client address and per key prefix). One row per limit and subject holds the
-- count of its current fixed window: a request's upsert adds to it, or starts the next window in place,
-- so a busy subject never grows the table. Rows whose window has ended are deleted by the scheduler
-- leader (window_end's index).
--
-- UNLOGGED: a counter is worth nothing after a crash (the table is emptied then, which only restarts
-- the windows) and writing it on every request should not also write WAL. fillfactor leaves room on
-- each page, so an increment (window_end unchanged) stays a heap-only update without index writes.
CREATE UNLOGGED TABLE rate_limit_counters (
    bucket text NOT NULL,
    subject text NOT NULL,
    window_start timestamptz NOT NULL,
    window_end timestamptz NOT NULL,
    count integer NOT NULL CHECK (count >= 0),
    PRIMARY KEY (bucket, subject)
) WITH (fillfactor = 70);
CREATE INDEX rate_limit_counters_by_end ON rate_limit_counters (window_end);
