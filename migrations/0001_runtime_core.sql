-- Tenants, solutions and the termination log of the runtime core.

CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE tenants (
    tenant_id text PRIMARY KEY CHECK (tenant_id ~ '^[a-z0-9][a-z0-9-]{1,62}$'),
    name text NOT NULL,
    tier text NOT NULL CHECK (tier IN ('free', 'pro', 'enterprise')),
    -- Bumped whenever the tenant's capabilities change, so cached graphs are rebuilt.
    capability_version integer NOT NULL DEFAULT 1,
    -- Optional subset of sub-agents this tenant enables (NULL = all its tier allows).
    enabled_sub_agents text[],
    -- Postgres schema holding the tenant's own business data (domain packs).
    data_schema text,
    domain text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE solutions (
    solution_id uuid PRIMARY KEY,
    tenant_id text NOT NULL REFERENCES tenants (tenant_id),
    thread_id text NOT NULL,
    goal text NOT NULL,
    status text NOT NULL CHECK (status IN ('running', 'interrupted', 'success', 'partial', 'error', 'rejected')),
    solution jsonb,
    -- configurable of the run (complexity, variant, ...) so resume rebuilds the same graph.
    run_config jsonb NOT NULL DEFAULT '{}',
    error text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX solutions_thread ON solutions (tenant_id, thread_id);
CREATE INDEX solutions_tenant_created ON solutions (tenant_id, created_at DESC);

CREATE TABLE termination_log (
    id bigserial PRIMARY KEY,
    tenant_id text NOT NULL,
    thread_id text NOT NULL,
    -- LangGraph checkpoint namespace of the agent loop that stopped ('' for the master agent).
    scope text NOT NULL,
    agent text NOT NULL,
    depth integer NOT NULL,
    reason text NOT NULL,
    iterations integer NOT NULL,
    progress double precision NOT NULL,
    confidence double precision NOT NULL,
    steps jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
-- A node re-run after a crash or a resume must not log the same stop twice.
CREATE UNIQUE INDEX termination_log_once ON termination_log (thread_id, scope, agent, reason, iterations);
CREATE INDEX termination_log_tenant ON termination_log (tenant_id, created_at DESC);

-- Login of each tenant's read-only SQL role (tools run tenant SQL as it, never as the app role).
CREATE TABLE tenant_readers (
    tenant_id text PRIMARY KEY REFERENCES tenants (tenant_id),
    role_name text NOT NULL UNIQUE,
    password text NOT NULL
);
