-- An operator's state update that skips a conversation's guard is applied only as an audited override
-- (who, why, which fields): a kind of its own in the append-only trail.
ALTER TABLE audit_events DROP CONSTRAINT audit_events_kind_check;
ALTER TABLE audit_events ADD CONSTRAINT audit_events_kind_check CHECK (
    kind IN ('message', 'decision', 'transition', 'read', 'tool', 'document', 'task', 'refused', 'override')
);
