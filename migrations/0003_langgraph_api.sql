-- Assistants and threads of the LangGraph-Platform-compatible API; runs of graphs on threads.

CREATE TABLE assistants (
    assistant_id uuid PRIMARY KEY,
    tenant_id text NOT NULL REFERENCES tenants (tenant_id),
    graph_id text NOT NULL,
    name text NOT NULL,
    description text,
    -- RunnableConfig merged under each run's config (e.g. configurable.complexity, ab_test_variant).
    config jsonb NOT NULL DEFAULT '{}',
    context jsonb NOT NULL DEFAULT '{}',
    metadata jsonb NOT NULL DEFAULT '{}',
    version integer NOT NULL DEFAULT 1,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX assistants_tenant ON assistants (tenant_id, created_at);

CREATE TABLE threads (
    thread_id uuid PRIMARY KEY,
    tenant_id text NOT NULL REFERENCES tenants (tenant_id),
    metadata jsonb NOT NULL DEFAULT '{}',
    status text NOT NULL DEFAULT 'idle' CHECK (status IN ('idle', 'busy', 'interrupted', 'error')),
    config jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX threads_tenant ON threads (tenant_id, created_at DESC);
CREATE INDEX threads_metadata ON threads USING gin (metadata jsonb_path_ops);

ALTER TABLE runs ADD COLUMN assistant_id uuid;
-- The run request: input or command, config, stream modes, ... as the API received them.
ALTER TABLE runs ADD COLUMN kwargs jsonb NOT NULL DEFAULT '{}';
ALTER TABLE runs ADD COLUMN metadata jsonb NOT NULL DEFAULT '{}';
ALTER TABLE runs ADD COLUMN multitask_strategy text NOT NULL DEFAULT 'enqueue'
    CHECK (multitask_strategy IN ('reject', 'enqueue', 'interrupt', 'rollback'));
