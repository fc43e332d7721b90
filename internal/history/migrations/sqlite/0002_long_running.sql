-- Long-running items (docs/long-running.md): what an item whose receiver answered 202 Accepted reports
-- through its callbacks. Every column is NULL or defaulted, so the rows of version 1 stay as they were
-- (a synchronous item: not async, no state) and a peer still on version 1 keeps writing its 19 columns.

ALTER TABLE JOB_EXECUTION_LOG ADD COLUMN is_async         INTEGER NOT NULL DEFAULT 0; -- the receiver answered 202
ALTER TABLE JOB_EXECUTION_LOG ADD COLUMN state            TEXT;    -- RUNNING | RETRYING | SUCCEEDED | FAILED | EXPIRED | CANCELLED
ALTER TABLE JOB_EXECUTION_LOG ADD COLUMN progress         INTEGER; -- 0-100, the last heartbeat's
ALTER TABLE JOB_EXECUTION_LOG ADD COLUMN message          TEXT;    -- the last heartbeat's or the completion's
ALTER TABLE JOB_EXECUTION_LOG ADD COLUMN heartbeat_at     INTEGER; -- orders the running records of an item
ALTER TABLE JOB_EXECUTION_LOG ADD COLUMN lease_expires_at INTEGER;
ALTER TABLE JOB_EXECUTION_LOG ADD COLUMN output           TEXT;    -- the start of the completion's output
