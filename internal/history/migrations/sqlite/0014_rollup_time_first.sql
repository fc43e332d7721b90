-- The job level of the stats' rollup keyed by time first (issue 21, docs/benchmarks.md "the rollup keyed by
-- time"). Keyed by job first, each of the three tables had one page in use per job (the job's newest cell,
-- inside the job's run of cells) and a second B-tree on the minute or hour that every cell entered too (its
-- entries, ordered by the primary key after the minute, a page per job of the minute's region): ~7.3 of the
-- 16.4 pages an item wrote with a history of 100,000 jobs (BenchmarkSmallBatchesAtScale, 100000x6), and a
-- working set of 100,000 pages per tree against the connection's 32 MB cache. Keyed by the minute (hour) first,
-- the cells an item writes are in the current minute's region, the period indexes are the keys themselves
-- (dropped), and a prune deletes a range of the key. A job's stats read each minute (hour) of a window with a
-- seek of their own (stats_rollup.go). The cells are copied as they are; PostgreSQL keeps its tables and
-- triggers (its 0014 is a no-op).

CREATE TABLE EXECUTION_STATS_MINUTE_T (
    minute      INTEGER NOT NULL,
    job_name    TEXT    NOT NULL,
    instance_id TEXT    NOT NULL,
    peer_fires  INTEGER NOT NULL DEFAULT 0,
    items       INTEGER NOT NULL DEFAULT 0,
    success     INTEGER NOT NULL DEFAULT 0,
    failure     INTEGER NOT NULL DEFAULT 0,
    running     INTEGER NOT NULL DEFAULT 0,
    misfire     INTEGER NOT NULL DEFAULT 0,
    failover    INTEGER NOT NULL DEFAULT 0,
    manual      INTEGER NOT NULL DEFAULT 0,
    dur_n       INTEGER NOT NULL DEFAULT 0,
    dur_sum     INTEGER NOT NULL DEFAULT 0,
    dur_max     INTEGER,
    late_n      INTEGER NOT NULL DEFAULT 0,
    late_sum    INTEGER NOT NULL DEFAULT 0,
    late_max    INTEGER,
    hostname    TEXT    NOT NULL DEFAULT '',
    ip          TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (minute, job_name, instance_id)
) STRICT, WITHOUT ROWID;
INSERT INTO EXECUTION_STATS_MINUTE_T (minute, job_name, instance_id, peer_fires, items, success, failure, running,
    misfire, failover, manual, dur_n, dur_sum, dur_max, late_n, late_sum, late_max, hostname, ip)
SELECT minute, job_name, instance_id, peer_fires, items, success, failure, running, misfire, failover, manual,
    dur_n, dur_sum, dur_max, late_n, late_sum, late_max, hostname, ip
FROM EXECUTION_STATS_MINUTE ORDER BY minute, job_name, instance_id;
DROP TABLE EXECUTION_STATS_MINUTE;
ALTER TABLE EXECUTION_STATS_MINUTE_T RENAME TO EXECUTION_STATS_MINUTE;

CREATE TABLE EXECUTION_FIRES_MINUTE_T (
    minute   INTEGER NOT NULL,
    job_name TEXT    NOT NULL,
    fires    INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (minute, job_name)
) STRICT, WITHOUT ROWID;
INSERT INTO EXECUTION_FIRES_MINUTE_T (minute, job_name, fires)
SELECT minute, job_name, fires FROM EXECUTION_FIRES_MINUTE ORDER BY minute, job_name;
DROP TABLE EXECUTION_FIRES_MINUTE;
ALTER TABLE EXECUTION_FIRES_MINUTE_T RENAME TO EXECUTION_FIRES_MINUTE;

CREATE TABLE EXECUTION_STATS_HIST_T (
    hour        INTEGER NOT NULL,
    job_name    TEXT    NOT NULL,
    instance_id TEXT    NOT NULL,
    kind        TEXT    NOT NULL,
    bin         INTEGER NOT NULL,
    n           INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (hour, job_name, instance_id, kind, bin)
) STRICT, WITHOUT ROWID;
INSERT INTO EXECUTION_STATS_HIST_T (hour, job_name, instance_id, kind, bin, n)
SELECT hour, job_name, instance_id, kind, bin, n FROM EXECUTION_STATS_HIST ORDER BY hour, job_name, instance_id, kind, bin;
DROP TABLE EXECUTION_STATS_HIST;
ALTER TABLE EXECUTION_STATS_HIST_T RENAME TO EXECUTION_STATS_HIST;
