-- An agent's recent runs on any thread (the console's agent page), newest first.
CREATE INDEX runs_assistant ON runs (tenant_id, assistant_id, created_at DESC);
