-- The audit trail of stage-driven conversations (seed 001 section 9.2): every decision and stage
-- transition, every customer field read, every tool call and every document generated. Append-only:
-- a trigger refuses to change or delete a row (rows outlive their tenant on purpose).
CREATE TABLE audit_events (
    event_id bigserial PRIMARY KEY,
    tenant_id text NOT NULL,
    thread_id text NOT NULL,
    workflow text NOT NULL,
    kind text NOT NULL CHECK (
        kind IN ('message', 'decision', 'transition', 'read', 'tool', 'document', 'task', 'refused')
    ),
    stage text,
    agent text,
    detail jsonb NOT NULL DEFAULT '{}'::jsonb,
    at timestamptz NOT NULL
);
CREATE INDEX audit_events_by_thread ON audit_events (tenant_id, thread_id, event_id);

CREATE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_events is append-only (% refused)', TG_OP;
END
$$;
CREATE TRIGGER audit_events_append_only BEFORE UPDATE OR DELETE ON audit_events
    FOR EACH ROW EXECUTE FUNCTION audit_events_append_only();
