-- ElasticJob's event-trace tables (column names kept), with the columns HTTP adds.
-- Times are INTEGER microseconds since the Unix epoch, UTC (read one with
-- datetime(start_time / 1000000, 'unixepoch')); booleans are 0 or 1.

CREATE TABLE JOB_EXECUTION_LOG (
    id                   TEXT    NOT NULL PRIMARY KEY,  -- the executionId (UUIDv7), also the webhook-id
    job_name             TEXT    NOT NULL,
    task_id              TEXT    NOT NULL,
    hostname             TEXT    NOT NULL,
    ip                   TEXT    NOT NULL,
    sharding_item        INTEGER NOT NULL,
    execution_source     TEXT    NOT NULL,              -- NORMAL_TRIGGER | MISFIRE | FAILOVER | MANUAL
    failure_cause        TEXT,
    is_success           INTEGER NOT NULL,
    start_time           INTEGER NOT NULL,
    complete_time        INTEGER,                       -- NULL while the item runs
    status_code          INTEGER NOT NULL DEFAULT 0,    -- the last attempt's HTTP status, 0 if none
    attempts             INTEGER NOT NULL DEFAULT 0,
    duration_ms          INTEGER NOT NULL DEFAULT 0,
    response_excerpt     TEXT,
    instance_id          TEXT    NOT NULL DEFAULT '',
    scheduled_at         INTEGER,
    sharding_total_count INTEGER NOT NULL DEFAULT 0,
    permanent            INTEGER NOT NULL DEFAULT 0
) STRICT;

-- Paging a job's executions, counting them (covering), finding its last one.
CREATE INDEX job_execution_log_job_start ON JOB_EXECUTION_LOG (job_name, start_time, id, is_success, complete_time);
-- Paging all executions; pruning.
CREATE INDEX job_execution_log_start ON JOB_EXECUTION_LOG (start_time, id);
CREATE INDEX job_execution_log_task ON JOB_EXECUTION_LOG (task_id);

CREATE TABLE JOB_STATUS_TRACE_LOG (
    id               TEXT    NOT NULL PRIMARY KEY,
    job_name         TEXT    NOT NULL,
    original_task_id TEXT    NOT NULL DEFAULT '',
    task_id          TEXT    NOT NULL,
    slave_id         TEXT    NOT NULL,                  -- the instance id
    source           TEXT    NOT NULL DEFAULT '',
    execution_type   TEXT    NOT NULL,                  -- READY | FAILOVER
    sharding_item    TEXT    NOT NULL,                  -- the task's items, "0,1,2"
    state            TEXT    NOT NULL,                  -- TASK_STAGING | TASK_RUNNING | TASK_FINISHED | TASK_ERROR
    message          TEXT,
    creation_time    INTEGER NOT NULL
) STRICT;

CREATE INDEX job_status_trace_log_job_time ON JOB_STATUS_TRACE_LOG (job_name, creation_time, id);
CREATE INDEX job_status_trace_log_task ON JOB_STATUS_TRACE_LOG (task_id, creation_time, id);
CREATE INDEX job_status_trace_log_time ON JOB_STATUS_TRACE_LOG (creation_time);
