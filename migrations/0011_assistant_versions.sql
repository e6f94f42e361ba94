-- Assistants are versioned, as in langgraph-api: every create or change writes a new immutable version;
-- the `assistants` row mirrors the live one. A tenant agent is an assistant whose version carries an
-- agent document (`agent_spec`); its name is unique among the tenant's live agents.
CREATE TABLE assistant_versions (
    assistant_id uuid NOT NULL REFERENCES assistants (assistant_id) ON DELETE CASCADE,
    tenant_id text NOT NULL REFERENCES tenants (tenant_id),
    version integer NOT NULL,
    graph_id text NOT NULL,
    name text NOT NULL,
    description text,
    config jsonb NOT NULL DEFAULT '{}',
    context jsonb NOT NULL DEFAULT '{}',
    metadata jsonb NOT NULL DEFAULT '{}',
    agent_spec jsonb,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (assistant_id, version)
);
CREATE INDEX assistant_versions_tenant ON assistant_versions (tenant_id, assistant_id);

ALTER TABLE assistants ADD COLUMN agent_spec jsonb;
ALTER TABLE assistants ADD COLUMN agent_name text GENERATED ALWAYS AS (agent_spec ->> 'name') STORED;
CREATE UNIQUE INDEX assistants_agent_name ON assistants (tenant_id, agent_name) WHERE agent_name IS NOT NULL;
CREATE INDEX assistants_agents ON assistants (tenant_id) WHERE agent_spec IS NOT NULL;

INSERT INTO assistant_versions (assistant_id, tenant_id, version, graph_id, name, description, config, context,
                                metadata, created_at)
SELECT assistant_id, tenant_id, version, graph_id, name, description, config, context, metadata, created_at
FROM assistants;
