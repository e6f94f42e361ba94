-- The claim reads the few oldest live runs of each tenant instead of sorting every queued run (issue 46).
CREATE INDEX runs_live_by_tenant ON runs (tenant_id, created_at) WHERE status IN ('pending', 'running');
