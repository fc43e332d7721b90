-- The stats' rollup counted a minute at a time (issue 21, docs/benchmarks.md "the rollup a minute at a time").
-- Counted as each batch of rows was written, an item's cells (its job's minute cell, its fire's, two bins of
-- its job's hour) were pages scattered over the rollup's tables, one for each job in the batch: ~2.5 of the
-- 8.2 pages an item wrote with a history of 100,000 jobs (BenchmarkSmallBatchesAtScale). The writer now
-- counts a minute's rows once the minute is over, in its cells' key order, and keeps here how far it has
-- counted (rollup.Frontier): every row of a minute before `minute`, and the rows of `minute` whose job's name
-- is at most `job` ('' none). A row it has not counted yet changes no cell; the stats read such rows beside the
-- cells. Every row already stored is counted: the frontier starts after the newest.
CREATE TABLE EXECUTION_ROLLUP_FRONTIER (
    id     INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    minute INTEGER NOT NULL,
    job    TEXT    NOT NULL
) STRICT;
INSERT INTO EXECUTION_ROLLUP_FRONTIER (id, minute, job)
SELECT 1, COALESCE(MAX(start_time) / 60000000 + 1, 0), '' FROM JOB_EXECUTION_LOG;
