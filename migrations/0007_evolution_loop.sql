-- The evolution loop proper: playbook history, skipped playbook runs, one knowledge pattern per key
-- (reinforced, never duplicated), when a solution was delivered (outcome checks count from it).

ALTER TABLE playbook_runs DROP CONSTRAINT playbook_runs_status_check;
ALTER TABLE playbook_runs ADD CONSTRAINT playbook_runs_status_check
    CHECK (status IN ('success', 'skipped', 'error'));

CREATE TABLE playbook_events (
    event_id bigserial PRIMARY KEY,
    playbook_id uuid NOT NULL REFERENCES playbooks (playbook_id),
    tenant_id text NOT NULL,
    action text NOT NULL CHECK (action IN ('deployed', 'disabled', 'rolled_back')),
    reason text,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX playbook_events_playbook ON playbook_events (playbook_id, event_id);

-- Problem type + intervention (+ tenant for private patterns): what reinforcement finds again.
ALTER TABLE village_knowledge ADD COLUMN pattern_key text;
CREATE UNIQUE INDEX village_knowledge_key ON village_knowledge (pattern_key) WHERE pattern_key IS NOT NULL;

ALTER TABLE solutions ADD COLUMN delivered_at timestamptz;

GRANT SELECT ON confidence_calibration TO master_agent_tenant;

-- Why a check could not measure (no data in its window, a failing query).
ALTER TABLE outcome_checks ADD COLUMN error text;
ALTER TABLE outcome_checks ADD COLUMN observations integer;

-- Calibration counts per stratum of a problem type and intervention: 'all', and how ambitious the goal
-- was against the strategy's own expectation (required lift / expected lift, bucketed).
ALTER TABLE confidence_calibration ADD COLUMN stratum text NOT NULL DEFAULT 'all';
ALTER TABLE confidence_calibration DROP CONSTRAINT confidence_calibration_pkey;
ALTER TABLE confidence_calibration ADD PRIMARY KEY (tenant_id, problem_type, intervention, stratum);

-- APScheduler's job store table (the shape its SQLAlchemyJobStore creates), made here under the
-- migration lock so processes starting together never race to create it.
CREATE TABLE apscheduler_jobs (
    id varchar(191) PRIMARY KEY,
    next_run_time double precision,
    job_state bytea NOT NULL
);
CREATE INDEX ix_apscheduler_jobs_next_run_time ON apscheduler_jobs (next_run_time);
