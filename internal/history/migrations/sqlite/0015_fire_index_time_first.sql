-- job_execution_log_fire keyed by the fire's time first (issue 21, docs/benchmarks.md "the rollup keyed by
-- time"). The rollup's lookup of a fire's rows in a minute (sqliteFireRows) and a page of one fire's items
-- (the executions API's job and scheduledAt) both give the job and the fire's scheduled time; keyed
-- (job_name, scheduled_at, ...) each item entered the index inside its job's run of entries, a page per job
-- (1.30 pages an item with a history of 100,000 jobs). Keyed (scheduled_at, job_name, ...) the entries of the
-- fires of the last seconds are neighbours, and both reads still seek the pair.
DROP INDEX job_execution_log_fire;
CREATE INDEX job_execution_log_fire ON JOB_EXECUTION_LOG (scheduled_at, job_name, start_time, id);
