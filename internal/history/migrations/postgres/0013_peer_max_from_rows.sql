-- SQLite's 0013 drops the two indexes its writer no longer reads (a peer cell's largest value is read again
-- off the minute's rows). PostgreSQL keeps its triggers (0009/0010), which read those indexes: its writes
-- run on its own host, not on the peers. This version exists so that both dialects have the same versions.
SELECT 1;
