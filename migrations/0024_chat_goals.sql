-- Goals stated in a conversation are solutions too (one list of goals, whatever door they came in by, each
-- with its outcome checks): a chat thread can hold several, so a thread no longer names one solution.
DROP INDEX solutions_thread;
CREATE INDEX solutions_thread ON solutions (tenant_id, thread_id, created_at DESC);
