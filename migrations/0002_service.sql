-- API keys and the runs queue of the service.

CREATE TABLE api_keys (
    key_id uuid PRIMARY KEY,
    tenant_id text NOT NULL REFERENCES tenants (tenant_id),
    name text NOT NULL DEFAULT '',
    -- First characters of the key, shown in listings so a key can be recognised; never enough to use it.
    prefix text NOT NULL,
    -- sha256 of the whole key; the key itself is shown once and never stored.
    key_hash text NOT NULL UNIQUE,
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz
);
CREATE INDEX api_keys_tenant ON api_keys (tenant_id);

CREATE TABLE runs (
    run_id uuid PRIMARY KEY,
    tenant_id text NOT NULL REFERENCES tenants (tenant_id),
    thread_id text NOT NULL,
    -- What to run: 'strategic_goal' (a solution) for now.
    kind text NOT NULL,
    -- The solution this run produces, for kind = strategic_goal.
    solution_id uuid REFERENCES solutions (solution_id),
    status text NOT NULL CHECK (status IN ('pending', 'running', 'success', 'error', 'interrupted')),
    error text,
    -- A worker owns a running run while its lease is fresh; an expired lease means the worker died.
    lease_owner text,
    lease_expires_at timestamptz,
    attempts integer NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    started_at timestamptz,
    finished_at timestamptz
);
CREATE INDEX runs_claimable ON runs (created_at) WHERE status IN ('pending', 'running');
CREATE INDEX runs_thread ON runs (tenant_id, thread_id, created_at);

-- Solutions are now also queued by the service before a worker starts them.
ALTER TABLE solutions DROP CONSTRAINT solutions_status_check;
ALTER TABLE solutions ADD CONSTRAINT solutions_status_check
    CHECK (status IN ('pending', 'running', 'interrupted', 'success', 'partial', 'error', 'rejected'));
-- The request as accepted (goal, timeline, options), so any worker can start or continue it.
ALTER TABLE solutions ADD COLUMN request jsonb NOT NULL DEFAULT '{}';
