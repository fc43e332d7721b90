-- One job-ordered B-tree under the executions instead of four (issue 21, docs/benchmarks.md "`steady-100000` with
-- a PostgreSQL history, and its job-ordered indexes"). With full-page writes on (PostgreSQL's default) the first
-- change of a page after a checkpoint writes the whole page to the WAL. A job-ordered index keeps each job's
-- newest entries on a leaf of its own once the job has a hundred rows or so, and at 100,000 jobs firing once a
-- minute a checkpoint's interval (26-57 s in ejbench's steady-100000, max_wal_size's default) meets each such
-- leaf about once: every job-ordered index cost an item a page image, ~8 KB of WAL, where a time-ordered one
-- costs its entry (BenchmarkPostgresWALAtScale).
-- * job_execution_log_job_stats (job_name, start_time, covering 10 columns, 0004) served the stats of a job's
--   window from its rows; since the rollup (0009) they read the cells, and a job's rows only at a window's edges
--   and ahead of the frontier, which job_execution_log_job_start (job_name, start_time, id) and the table serve,
--   as SQLite's 0012 and 0019 did.
-- * job_execution_log_fire_peer (job_name, scheduled_at, instance_id, start_time, 0009) served 0009's per-row
--   rollup: since 0021 its triggers count only the rows written behind the frontier (an item that ends after
--   its minute was counted), and they seek a fire in job_execution_log_fire as well (SQLite dropped its copy
--   in 0011).
-- * job_execution_log_fire keyed by the fire's time first, as SQLite's 0015: a fire's rows are still one range
--   (scheduled_at, job_name), and a new entry goes at the index's end.
DROP INDEX IF EXISTS job_execution_log_job_stats;
DROP INDEX IF EXISTS job_execution_log_fire_peer;
DROP INDEX IF EXISTS job_execution_log_fire;
CREATE INDEX job_execution_log_fire ON JOB_EXECUTION_LOG (scheduled_at, job_name, start_time, id);
