-- SQLite's 0018 keys its status traces' task index by the task id's time-ordered unique part (its writer runs
-- on the peers, where a scattered leaf costs its page twice, in the WAL and at the checkpoint). PostgreSQL's is
-- unchanged: this version exists so that both dialects have the same versions.
SELECT 1;
