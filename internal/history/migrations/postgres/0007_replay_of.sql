-- The execution an item execution replays (POST /api/v1/executions/{id}/replay, issue 24): a replay is a new
-- execution (its own webhook-id, source MANUAL) linked to the failed one it re-runs. Nullable and added at
-- the end: peers on version 6 or older neither read nor write it.

ALTER TABLE JOB_EXECUTION_LOG ADD COLUMN replay_of TEXT;
