-- Workflow runs (README "Workflows"): one row per run, written by the engine peer when the run starts, ends or
-- is retried (an upsert by id). ZooKeeper keeps the active runs and the last few ended ones; this table keeps
-- them all, pruned with the history. A new table: peers on an older version neither read nor write it.

CREATE TABLE WORKFLOW_RUNS (
    id          TEXT        PRIMARY KEY,
    workflow    TEXT        NOT NULL,
    state       TEXT        NOT NULL,       -- PENDING | RUNNING | SUCCEEDED | FAILED | CANCELLED | SKIPPED
    trigger     TEXT        NOT NULL,       -- SCHEDULE | MANUAL
    attempt     INTEGER     NOT NULL DEFAULT 1,
    created_at  TIMESTAMPTZ NOT NULL,
    ended_at    TIMESTAMPTZ,                -- NULL: not ended
    run         TEXT        NOT NULL        -- the run as the API shows it (JSON)
);
CREATE INDEX workflow_runs_workflow ON WORKFLOW_RUNS (workflow, created_at, id);
CREATE INDEX workflow_runs_created  ON WORKFLOW_RUNS (created_at);
