-- The meta-orchestrator (seed 004): requests, the state broker's versioned artifacts, the full decision
-- history, promotion decisions (kept whether applied or rejected) and the append-only meta-evaluation
-- log. Artifact versions are immutable: a change is a new version.
CREATE TABLE meta_requests (
    request_id uuid PRIMARY KEY,
    tenant_id text NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    thread_id text,
    request text NOT NULL,
    intent text,
    runtime_target text,
    playbook text,
    system_name text,
    status text NOT NULL CHECK (status IN ('running', 'blocked', 'awaiting_human', 'done', 'partial', 'failed')),
    result jsonb,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
);
CREATE INDEX meta_requests_by_tenant ON meta_requests (tenant_id, created_at DESC);

CREATE TABLE meta_artifacts (
    request_id uuid NOT NULL REFERENCES meta_requests (request_id) ON DELETE CASCADE,
    tenant_id text NOT NULL,
    artifact_type text NOT NULL,
    version integer NOT NULL CHECK (version >= 1),
    written_by text NOT NULL,
    payload jsonb NOT NULL,
    summary text NOT NULL,
    summary_hash text NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (request_id, artifact_type, version)
);

CREATE TABLE meta_history (
    entry_id bigserial PRIMARY KEY,
    request_id uuid NOT NULL REFERENCES meta_requests (request_id) ON DELETE CASCADE,
    tenant_id text NOT NULL,
    phase text NOT NULL,
    decision text NOT NULL,
    outcome text NOT NULL,
    detail jsonb NOT NULL DEFAULT '{}'::jsonb,
    at timestamptz NOT NULL
);
CREATE INDEX meta_history_by_request ON meta_history (request_id, entry_id);

CREATE TABLE meta_promotions (
    decision_id uuid PRIMARY KEY,
    request_id uuid NOT NULL REFERENCES meta_requests (request_id) ON DELETE CASCADE,
    tenant_id text NOT NULL,
    proposer text NOT NULL,
    target_artifact text NOT NULL,
    base_version integer NOT NULL,
    decision_version integer NOT NULL,
    status text NOT NULL CHECK (status IN ('pending', 'accepted', 'modified', 'rejected')),
    decided_by text,
    reason text,
    applied_version integer,
    created_at timestamptz NOT NULL,
    decided_at timestamptz
);
CREATE INDEX meta_promotions_by_request ON meta_promotions (request_id, created_at);

CREATE TABLE meta_eval_log (
    entry_id bigserial PRIMARY KEY,
    tenant_id text NOT NULL,
    request_id uuid NOT NULL,
    playbook text NOT NULL,
    metric text NOT NULL,
    value double precision NOT NULL,
    detail jsonb NOT NULL DEFAULT '{}'::jsonb,
    at timestamptz NOT NULL
);
CREATE INDEX meta_eval_log_by_tenant ON meta_eval_log (tenant_id, metric);

CREATE FUNCTION meta_eval_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'meta_eval_log is append-only (% refused)', TG_OP;
END
$$;
CREATE TRIGGER meta_eval_log_append_only BEFORE UPDATE OR DELETE ON meta_eval_log
    FOR EACH ROW EXECUTE FUNCTION meta_eval_log_append_only();
