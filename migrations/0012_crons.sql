-- Crons of the LangGraph-compatible API: a run request (`payload`) made on a schedule, on one thread
-- (`thread_id`) or on a new thread each time. The scheduler leader's job fires a cron at
-- `next_run_date`; `cron_firings` keeps one row per instant fired, so an instant never makes two runs.
CREATE TABLE crons (
    cron_id uuid PRIMARY KEY,
    tenant_id text NOT NULL REFERENCES tenants (tenant_id),
    assistant_id uuid NOT NULL,
    thread_id uuid REFERENCES threads (thread_id) ON DELETE CASCADE,
    schedule text NOT NULL,
    timezone text,
    end_time timestamptz,
    payload jsonb NOT NULL,
    metadata jsonb NOT NULL DEFAULT '{}',
    on_run_completed text CHECK (on_run_completed IN ('delete', 'keep')),
    enabled boolean NOT NULL DEFAULT true,
    next_run_date timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX crons_tenant ON crons (tenant_id, created_at);

CREATE TABLE cron_firings (
    cron_id uuid NOT NULL REFERENCES crons (cron_id) ON DELETE CASCADE,
    scheduled_for timestamptz NOT NULL,
    fired_at timestamptz NOT NULL DEFAULT now(),
    run_id uuid,
    error text,
    PRIMARY KEY (cron_id, scheduled_for)
);
