-- The status traces' job- and task-ordered indexes, narrowed (issue 21, docs/benchmarks.md "narrower trace
-- indexes"). Each entry of an index ordered by job (or by task, whose id begins with the job's name) goes in
-- the middle of a packed B-tree, and a full leaf is split by rewriting it, its siblings and its parent: the
-- wider the entries, the more often. With a history of 10,000 jobs these two indexes were 5.7 of an item's
-- 10.5 pages (BenchmarkSmallBatchesAtScale).
-- * job_status_trace_log_job_time (job_name, creation_time, id) -> (job_name, creation_time): the trace's id
--   (36 bytes of an entry's ~60) only broke ties of one microsecond; a job's page still reads in order and
--   sorts only such ties.
-- * job_status_trace_log_task (task_id, creation_time, id) -> (task_id): a task has a few traces (staging,
--   running, its end), read together and sorted.
-- Readers: a job's traces (listTraces), a task's traces (the same, INDEXED BY the task index).
DROP INDEX job_status_trace_log_job_time;
CREATE INDEX job_status_trace_log_job_time ON JOB_STATUS_TRACE_LOG (job_name, creation_time);
DROP INDEX job_status_trace_log_task;
CREATE INDEX job_status_trace_log_task ON JOB_STATUS_TRACE_LOG (task_id);
