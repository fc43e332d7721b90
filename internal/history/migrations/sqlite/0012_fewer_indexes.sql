-- Fewer B-trees a history row is written in (issue 21, docs/benchmarks.md): every index an execution row
-- enters is a leaf page dirtied, written to the WAL at the commit and copied back at the checkpoint, and the
-- job-ordered ones are a scattered page an item.
-- * job_execution_log_task (task_id) served no query: no read of the executions filters by task id (the
--   status traces' own index serves their task filter).
-- * job_execution_log_job_start (job_name, start_time, id, is_success, complete_time) and 0004's covering
--   job_execution_log_job_stats (job_name, start_time, scheduled_at, ...) both began with (job_name,
--   start_time): one index, ordered (job_name, start_time, id) for the keyset pages and covering the stats'
--   columns, serves both.
-- * job_execution_log_start (start_time, id) and 0004's covering job_execution_log_start_stats likewise.
-- JOB_EXECUTION_LOG is then 5 B-trees instead of 8: the table, its primary key, these two, and
-- job_execution_log_fire.
DROP INDEX job_execution_log_task;
DROP INDEX job_execution_log_job_start;
DROP INDEX job_execution_log_job_stats;
CREATE INDEX job_execution_log_job_start ON JOB_EXECUTION_LOG
    (job_name, start_time, id, is_success, complete_time, scheduled_at, duration_ms, execution_source, instance_id, sharding_item, hostname, ip);
DROP INDEX job_execution_log_start;
DROP INDEX job_execution_log_start_stats;
CREATE INDEX job_execution_log_start ON JOB_EXECUTION_LOG
    (start_time, id, job_name, scheduled_at, duration_ms, is_success, complete_time, execution_source, instance_id, hostname, ip);
