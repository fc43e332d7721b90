-- The stats' rollup per batch (issue 21, docs/benchmarks.md): the writer aggregates each batch of execution
-- rows by cell in Go (internal/history/rollup) and upserts each cell once, in the transaction that writes the
-- rows; Prune does the same for the rows it deletes. These are the only statements that write
-- JOB_EXECUTION_LOG, so 0009/0010's per-row triggers (six upserts and up to four probes a row) go, and with
-- them the indexes only their per-row probes and re-reads needed: a batch counts a fire's rows per minute
-- through job_execution_log_fire, and re-reads a cell's largest value (rarely: a removed largest value not
-- matched by an added one) through job_execution_log_job_start. A release before 0011 writing this file would
-- no longer keep the rollup: such a peer warns that the schema is newer than it knows.
DROP TRIGGER job_execution_log_stats_insert;
DROP TRIGGER job_execution_log_stats_update;
DROP TRIGGER job_execution_log_stats_delete;
DROP TRIGGER execution_stats_change;
DROP VIEW EXECUTION_STATS_CHANGE;
DROP INDEX job_execution_log_fire_peer;
DROP INDEX job_execution_log_cell_duration;
DROP INDEX job_execution_log_cell_lateness;
