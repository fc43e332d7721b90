-- The console's charts (issue 25): covering indexes for the stats of one job's window, of every job's
-- window, and for one fire's items, so 100,000 executions aggregate from the index alone.

CREATE INDEX job_execution_log_job_stats ON JOB_EXECUTION_LOG (job_name, start_time)
    INCLUDE (scheduled_at, duration_ms, is_success, complete_time, execution_source, instance_id, hostname, ip, id, sharding_item);
CREATE INDEX job_execution_log_start_stats ON JOB_EXECUTION_LOG (start_time)
    INCLUDE (job_name, scheduled_at, duration_ms, is_success, complete_time, execution_source, instance_id, hostname, ip);
CREATE INDEX job_execution_log_fire ON JOB_EXECUTION_LOG (job_name, scheduled_at, start_time, id);
