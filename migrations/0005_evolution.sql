-- The self-evolution loop's tables: playbooks and their runs, outcome checks, learnings, village
-- knowledge (pgvector, row-level security) and confidence calibration; an outbox for notifications.

CREATE TABLE playbooks (
    playbook_id uuid PRIMARY KEY,
    tenant_id text NOT NULL REFERENCES tenants (tenant_id),
    solution_id uuid REFERENCES solutions (solution_id),
    version integer NOT NULL DEFAULT 1,
    spec jsonb NOT NULL,
    status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled', 'rolled_back')),
    schedule text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX playbooks_tenant ON playbooks (tenant_id, created_at DESC);

CREATE TABLE playbook_runs (
    run_id uuid PRIMARY KEY,
    playbook_id uuid NOT NULL REFERENCES playbooks (playbook_id),
    tenant_id text NOT NULL,
    scheduled_for timestamptz NOT NULL,
    status text NOT NULL CHECK (status IN ('success', 'error')),
    results jsonb NOT NULL DEFAULT '[]',
    error text,
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (playbook_id, scheduled_for)
);

CREATE TABLE outcome_checks (
    check_id uuid PRIMARY KEY,
    tenant_id text NOT NULL REFERENCES tenants (tenant_id),
    solution_id uuid NOT NULL REFERENCES solutions (solution_id),
    checkpoint_day integer NOT NULL,
    due_at timestamptz NOT NULL,
    metric_query jsonb NOT NULL,
    expected double precision,
    measured double precision,
    status text NOT NULL DEFAULT 'scheduled' CHECK (status IN ('scheduled', 'measured', 'error')),
    is_final boolean NOT NULL DEFAULT false,
    measured_at timestamptz,
    UNIQUE (solution_id, checkpoint_day)
);
CREATE INDEX outcome_checks_due ON outcome_checks (due_at) WHERE status = 'scheduled';

CREATE TABLE solution_learnings (
    solution_id uuid PRIMARY KEY REFERENCES solutions (solution_id),
    tenant_id text NOT NULL REFERENCES tenants (tenant_id),
    problem_type text NOT NULL,
    root_cause text,
    solution_pattern text,
    industry text,
    vertical text,
    expected_outcome jsonb,
    actual_outcome jsonb,
    success boolean,
    confidence_predicted double precision,
    confidence_actual double precision,
    confidence_delta double precision,
    timeline_days integer,
    budget_usd integer,
    constraints jsonb,
    evidence jsonb,
    created_at timestamptz NOT NULL DEFAULT now(),
    measured_at timestamptz
);
CREATE INDEX solution_learnings_problem ON solution_learnings (problem_type);

CREATE TABLE village_knowledge (
    pattern_id uuid PRIMARY KEY,
    tenant_id text NOT NULL REFERENCES tenants (tenant_id),
    -- 'private' to its tenant, or 'shared' (anonymised) with every tenant.
    visibility text NOT NULL DEFAULT 'private' CHECK (visibility IN ('private', 'shared')),
    pattern_name text NOT NULL,
    domain text NOT NULL,
    description text NOT NULL,
    problem_type text NOT NULL,
    root_cause text,
    intervention jsonb NOT NULL DEFAULT '{}',
    expected_outcome text,
    evidence jsonb NOT NULL DEFAULT '[]',
    applicability jsonb NOT NULL DEFAULT '{}',
    confidence double precision NOT NULL DEFAULT 0.5,
    reuse_count integer NOT NULL DEFAULT 0,
    success_rate double precision,
    source text,
    -- Vectors are stored with the model that made them, so a change of embedder cannot mix spaces;
    -- `master-agent knowledge reembed` rebuilds them.
    embedding vector,
    embedding_model text,
    embedding_dim integer,
    created_at timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz
);
CREATE INDEX village_knowledge_tenant ON village_knowledge (tenant_id, problem_type);
-- HNSW needs a fixed dimension: one partial index per dimension in use (384: the local MiniLM).
CREATE INDEX village_knowledge_embedding_384 ON village_knowledge
    USING hnsw ((embedding::vector(384)) vector_cosine_ops) WHERE embedding_dim = 384;

CREATE TABLE confidence_calibration (
    tenant_id text NOT NULL,
    problem_type text NOT NULL,
    intervention text NOT NULL,
    successes integer NOT NULL DEFAULT 0,
    failures integer NOT NULL DEFAULT 0,
    predicted_sum double precision NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, problem_type, intervention)
);

CREATE TABLE outbox (
    message_id uuid PRIMARY KEY,
    tenant_id text NOT NULL,
    channel text NOT NULL,
    subject text NOT NULL,
    body jsonb NOT NULL,
    status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
    created_at timestamptz NOT NULL DEFAULT now(),
    delivered_at timestamptz
);

-- Tenant queries run as this role (SET LOCAL ROLE) with master_agent.tenant_id set, so Postgres itself
-- keeps a tenant to its own private knowledge plus shared knowledge.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'master_agent_tenant') THEN
        CREATE ROLE master_agent_tenant NOLOGIN;
    END IF;
END
$$;
GRANT master_agent_tenant TO CURRENT_USER;
GRANT SELECT, INSERT, UPDATE ON village_knowledge, solution_learnings TO master_agent_tenant;

ALTER TABLE village_knowledge ENABLE ROW LEVEL SECURITY;
CREATE POLICY knowledge_read ON village_knowledge FOR SELECT TO master_agent_tenant
    USING (visibility = 'shared' OR tenant_id = current_setting('master_agent.tenant_id', true));
CREATE POLICY knowledge_insert ON village_knowledge FOR INSERT TO master_agent_tenant
    WITH CHECK (tenant_id = current_setting('master_agent.tenant_id', true));
CREATE POLICY knowledge_update ON village_knowledge FOR UPDATE TO master_agent_tenant
    USING (tenant_id = current_setting('master_agent.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('master_agent.tenant_id', true));

ALTER TABLE solution_learnings ENABLE ROW LEVEL SECURITY;
CREATE POLICY learnings_own ON solution_learnings TO master_agent_tenant
    USING (tenant_id = current_setting('master_agent.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('master_agent.tenant_id', true));
