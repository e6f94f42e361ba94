-- A learning names the measurement it came from (the tenant's metric query and its window), so one
-- measured world is evidence once however many solutions were measured on it. `confidence` predicts
-- whether the user's target is met by the deadline: learnings record that (`target_met`) and how far
-- the measured value landed from the expected one (`expected_error`).
ALTER TABLE solution_learnings
    ADD COLUMN target_met boolean,
    ADD COLUMN expected_value double precision,
    ADD COLUMN expected_error double precision,
    ADD COLUMN measurement_key text,
    ADD COLUMN window_start timestamptz,
    ADD COLUMN window_end timestamptz,
    -- false: an earlier learning measured the same metric of the same entity over an overlapping
    -- window; this one is kept for the record but counted nowhere.
    ADD COLUMN independent boolean NOT NULL DEFAULT true;
UPDATE solution_learnings SET target_met = success;
CREATE INDEX solution_learnings_measurement ON solution_learnings (measurement_key, window_end);
