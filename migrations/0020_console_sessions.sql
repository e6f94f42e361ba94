-- Web console sessions, kept server-side so signing out (or revoking the key that signed in) ends a
-- session at once, however many copies of its cookie exist. The cookie holds a random opaque id; only
-- its sha256 is stored, so a copy of this table signs nobody in.
CREATE TABLE console_sessions (
    session_hash text PRIMARY KEY,
    tenant_id text NOT NULL REFERENCES tenants (tenant_id),
    -- The key that signed in: a session never outlives it (checked at every lookup).
    key_id uuid NOT NULL REFERENCES api_keys (key_id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    -- Idle expiry counts from here (touched at most once a minute, not on every request).
    last_seen_at timestamptz NOT NULL DEFAULT now(),
    -- Absolute expiry, fixed at sign-in.
    expires_at timestamptz NOT NULL,
    revoked_at timestamptz
);
CREATE INDEX console_sessions_by_key ON console_sessions (key_id);
-- Sign-in deletes rows long past their absolute expiry; this keeps that a range scan.
CREATE INDEX console_sessions_by_expiry ON console_sessions (expires_at);

-- A tenant's own sessions only, when acting as the tenant (sign-out revokes under it). The lookup by the
-- cookie's hash runs as the service role: it is what finds out which tenant the request is.
GRANT SELECT, UPDATE (revoked_at) ON console_sessions TO master_agent_tenant;
ALTER TABLE console_sessions ENABLE ROW LEVEL SECURITY;
CREATE POLICY console_sessions_own ON console_sessions TO master_agent_tenant
    USING (tenant_id = current_setting('master_agent.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('master_agent.tenant_id', true));
