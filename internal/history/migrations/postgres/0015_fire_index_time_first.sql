-- SQLite's 0015 keys its job_execution_log_fire by the fire's time first (its writer runs on the peers).
-- PostgreSQL's triggers read its own indexes, unchanged: this version exists so that both dialects have the
-- same versions.
SELECT 1;
