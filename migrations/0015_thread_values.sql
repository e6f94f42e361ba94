-- A thread's current values and pending interrupts on its row, as langgraph-api keeps them: written at
-- each run's end and each state update, so threads.get and threads.search show (and filter by) them
-- without reading checkpoints.
ALTER TABLE threads ADD COLUMN "values" jsonb;
ALTER TABLE threads ADD COLUMN interrupts jsonb NOT NULL DEFAULT '{}'::jsonb;
