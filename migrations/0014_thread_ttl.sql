-- A thread's own time to live (langgraph-api's thread `ttl`): swept `ttl_minutes` after its last activity
-- (or its last keep_latest sweep), by deleting it or by keeping only its latest checkpoint.
ALTER TABLE threads ADD COLUMN ttl_minutes double precision CHECK (ttl_minutes > 0);
ALTER TABLE threads ADD COLUMN ttl_strategy text CHECK (ttl_strategy IN ('delete', 'keep_latest'));
ALTER TABLE threads ADD COLUMN ttl_swept_at timestamptz;
CREATE INDEX threads_ttl ON threads (updated_at) WHERE ttl_minutes IS NOT NULL;
