-- Fewer pages an item (issue 21, docs/benchmarks.md "third pass"): 0010's two indexes on the job cells'
-- largest values, execution_stats_minute_peer_duration (minute, instance_id, dur_max) and
-- execution_stats_minute_peer_lateness (minute, instance_id, late_max), served one read only: a peer cell's
-- largest value read again after a removal took it away (a prune, an end shorter than the record it
-- replaces). Every new job cell entered both and every larger value moved its entry, each time a leaf of the
-- minute's range ordered by value: 1.4 of the 11.5 pages an item wrote with a history of 10,000 jobs
-- (BenchmarkSmallBatchesAtScale). The writer now reads that largest value off the minute's rows through
-- job_execution_log_start (start_time first, covering duration_ms, scheduled_at, complete_time and
-- instance_id): a range of one minute, read only when a removal took the largest value. Nothing stored
-- changes; PostgreSQL's 0013 is a no-op.
DROP INDEX execution_stats_minute_peer_duration;
DROP INDEX execution_stats_minute_peer_lateness;
