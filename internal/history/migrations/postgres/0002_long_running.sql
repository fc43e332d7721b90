-- Long-running items (docs/long-running.md): what an item whose receiver answered 202 Accepted reports
-- through its callbacks. Every column is NULL or has a constant default, so adding them rewrites no row,
-- the rows of version 1 stay as they were (a synchronous item: not async, no state) and a peer still on
-- version 1 keeps writing its 19 columns.

ALTER TABLE JOB_EXECUTION_LOG
    ADD COLUMN is_async         BOOLEAN     NOT NULL DEFAULT FALSE, -- the receiver answered 202
    ADD COLUMN state            TEXT,                               -- RUNNING | RETRYING | SUCCEEDED | FAILED | EXPIRED | CANCELLED
    ADD COLUMN progress         INTEGER,                            -- 0-100, the last heartbeat's
    ADD COLUMN message          TEXT,                               -- the last heartbeat's or the completion's
    ADD COLUMN heartbeat_at     TIMESTAMPTZ,                        -- orders the running records of an item
    ADD COLUMN lease_expires_at TIMESTAMPTZ,
    ADD COLUMN output           TEXT;                               -- the start of the completion's output
