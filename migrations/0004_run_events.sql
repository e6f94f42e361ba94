-- Stream events of runs, kept so a client that reconnects with Last-Event-ID gets what it missed,
-- whichever process executed the run.
CREATE TABLE run_events (
    run_id uuid NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    seq integer NOT NULL,
    event text NOT NULL,
    data jsonb,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, seq)
);

-- How a running run was asked to stop: 'interrupt' (keep its work) or 'rollback' (remove it).
ALTER TABLE runs ADD COLUMN cancel_action text CHECK (cancel_action IN ('interrupt', 'rollback'));
