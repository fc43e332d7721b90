-- The status traces' task index keyed by the task id's unique part, the last 36 characters (issue 21,
-- docs/benchmarks.md "a task's traces found by its time-ordered unique"). A task id is ElasticJob's
-- {jobName}@-@{items}@-@{READY|FAILOVER}@-@{instanceId}@-@{unique}: keyed by the whole id, a task's entries
-- went inside its job's run of entries, at a random place in it (the unique was a random UUID), a scattered
-- leaf and its splits: 2.5 of the 11.9 pages an item wrote with a history of 10,000 jobs
-- (BenchmarkSmallBatchesAtScale), the most of any B-tree. The unique is a UUIDv7 since this version, so the
-- entries of the tasks of the last seconds are neighbours at the index's end. A task's traces are read with
-- substr(task_id, -36) = substr(?, -36) AND task_id = ? (listTraces); ids written before keep their place.
DROP INDEX job_status_trace_log_task;
CREATE INDEX job_status_trace_log_task ON JOB_STATUS_TRACE_LOG (substr(task_id, -36));
