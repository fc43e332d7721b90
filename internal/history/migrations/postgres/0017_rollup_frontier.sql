-- SQLite's 0017 counts the stats' rollup a minute at a time, behind a frontier (its writer runs on the peers,
-- where an item's scattered cells cost pages twice, in the WAL and at the checkpoint). PostgreSQL's triggers
-- count every row as it is written: this version exists so that both dialects have the same versions.
SELECT 1;
