-- Fewer indexes on JOB_EXECUTION_LOG (issue 21): job_execution_log_task (task_id) served no query (no read
-- of the executions filters by task id). SQLite's 0012 also merges its job- and start-ordered indexes with
-- 0004's covering ones; PostgreSQL's stay as they are: its writes run on its own host, not on the peers.
DROP INDEX IF EXISTS job_execution_log_task;
