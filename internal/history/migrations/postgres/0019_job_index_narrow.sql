-- SQLite's 0019 narrows its executions' job-ordered index (its writer runs on the peers, where a split of a
-- packed B-tree's leaf costs its pages twice, in the WAL and at the checkpoint). PostgreSQL's is unchanged:
-- this version exists so that both dialects have the same versions.
SELECT 1;
