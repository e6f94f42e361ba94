-- Workflow metrics (turns, time per stage, worker utilisation, completion) read a tenant's events
-- of a few kinds: messages, transitions, tasks.
CREATE INDEX audit_events_by_kind ON audit_events (tenant_id, kind, workflow);
