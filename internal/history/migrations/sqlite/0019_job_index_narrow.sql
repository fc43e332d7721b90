-- The executions' job-ordered index narrowed to what reads of it need to cover (issue 21, docs/benchmarks.md
-- "a narrower job index for the executions"). Each execution's entry goes in the middle of a packed B-tree,
-- at its job's end, and a full leaf is split by rewriting it, its siblings and its parent: the wider the
-- entries, the more often (0016 did the same for the status traces). With a history of 10,000 jobs this
-- index was 2.09 of an item's 5.76 pages (BenchmarkSmallBatchesAtScale); its 12 columns (~130 bytes an entry)
-- covered the stats of 0004, which read the rollup since 0009 and a job's rows only at a window's edges.
-- * (job_name, start_time, id): a job's pages, in order, by keyset (listExecutions, without sorting).
-- * is_success, complete_time: the job list's counts of the last hour and day (CountsSince) and its last
--   result (LastExecutions) stay read off the index alone.
-- Everything else a read of one job's rows needs (a window's edges, the rows the rollup has not counted yet,
-- a chart's points, a cell's largest value read again) is read from the table by rowid.
DROP INDEX job_execution_log_job_start;
CREATE INDEX job_execution_log_job_start ON JOB_EXECUTION_LOG (job_name, start_time, id, is_success, complete_time);
