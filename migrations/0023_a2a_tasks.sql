-- Tasks of the agent-to-agent protocol (A2A, at /a2a/{assistant_id}): the protocol's Task (its status,
-- history and artifacts) as the A2A SDK hands it to its task store, one row per task and tenant, so any
-- service process answers GetTask / ListTasks / CancelTask for a task another one ran.
CREATE TABLE a2a_tasks (
    tenant_id text NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    task_id text NOT NULL,
    context_id text NOT NULL,
    task jsonb NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, task_id)
);
CREATE INDEX a2a_tasks_by_context ON a2a_tasks (tenant_id, context_id, updated_at DESC);

GRANT SELECT ON a2a_tasks TO master_agent_tenant;
ALTER TABLE a2a_tasks ENABLE ROW LEVEL SECURITY;
CREATE POLICY a2a_tasks_own ON a2a_tasks TO master_agent_tenant
    USING (tenant_id = current_setting('master_agent.tenant_id', true));
