-- SQLite's 0016 narrows its status traces' job and task indexes (its writer runs on the peers, where a split of
-- a packed B-tree's leaf costs its pages twice, in the WAL and at the checkpoint). PostgreSQL's are unchanged:
-- this version exists so that both dialects have the same versions.
SELECT 1;
