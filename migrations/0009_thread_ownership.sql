-- Every thread has an owner row in `threads`, whoever made it. A deleted thread leaves a tombstone, and
-- checkpoints written for it afterwards (a run that was still executing somewhere) are dropped, so a
-- deleted thread's id never carries state again.
CREATE TABLE deleted_threads (
    thread_id text PRIMARY KEY,
    deleted_at timestamptz NOT NULL DEFAULT now()
);

CREATE FUNCTION master_agent_drop_deleted_thread_rows() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM deleted_threads WHERE thread_id = NEW.thread_id) THEN
        RETURN NULL;
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER drop_deleted_thread_rows BEFORE INSERT ON checkpoints
    FOR EACH ROW EXECUTE FUNCTION master_agent_drop_deleted_thread_rows();
CREATE TRIGGER drop_deleted_thread_rows BEFORE INSERT ON checkpoint_blobs
    FOR EACH ROW EXECUTE FUNCTION master_agent_drop_deleted_thread_rows();
CREATE TRIGGER drop_deleted_thread_rows BEFORE INSERT ON checkpoint_writes
    FOR EACH ROW EXECUTE FUNCTION master_agent_drop_deleted_thread_rows();

-- Threads of strategic goals made before this migration (CLI and API) get their owner row.
INSERT INTO threads (thread_id, tenant_id, metadata, config)
SELECT s.thread_id::uuid, s.tenant_id, jsonb_build_object('solution_id', s.solution_id), '{}'::jsonb
FROM solutions s
WHERE s.thread_id ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
ON CONFLICT (thread_id) DO NOTHING;
