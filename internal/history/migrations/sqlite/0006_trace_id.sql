-- The W3C trace id of each item execution (README "Tracing"): the caller's trace for a traced trigger, else
-- the item's own. Nullable and added at the end: peers on version 5 or older neither read nor write it.

ALTER TABLE JOB_EXECUTION_LOG ADD COLUMN trace_id TEXT;
