-- When the workflow of a delivery's run was confirmed started: a duplicate of a started
-- delivery answers its run_id without asking Temporal again, so a redelivery can never
-- start a second run, even after Temporal's retention has forgotten the first.
ALTER TABLE hook_deliveries ADD COLUMN started_at timestamptz;
