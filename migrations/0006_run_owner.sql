-- lease_owner now stays after a run finishes: it names the worker that executed the run last.
COMMENT ON COLUMN runs.lease_owner IS 'worker holding the run while running; the one that ran it last once finished';
