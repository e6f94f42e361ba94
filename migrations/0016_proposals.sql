-- Previews of high-risk tool calls (seed 002): a call waits here until the user accepts it in a later
-- flow of the same thread; the tools step runs a high-risk call only by claiming an accepted row with
-- the same tool and arguments, once.
CREATE TABLE proposals (
    proposal_id uuid PRIMARY KEY,
    tenant_id text NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    thread_id text NOT NULL,
    agent text NOT NULL,
    tool text NOT NULL,
    args jsonb NOT NULL,
    args_digest text NOT NULL,
    risk text NOT NULL CHECK (risk IN ('low', 'medium', 'high')),
    preview jsonb NOT NULL,
    status text NOT NULL CHECK (
        status IN ('pending', 'accepted', 'executing', 'executed', 'failed', 'cancelled', 'revised')
    ),
    feedback text,
    result jsonb,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX proposals_by_thread ON proposals (tenant_id, thread_id, created_at DESC);
