-- SQLite's 0014 keys the job level of the rollup by time first: its writer runs on the peers, where a page per
-- job in use was the cost at scale. PostgreSQL keeps its tables, their triggers (0009/0010, whose functions take
-- the minute table's row type) and its indexes: its writes run on its own host. This version exists so that
-- both dialects have the same versions.
SELECT 1;
