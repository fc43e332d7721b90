-- The stats' rollup, a level up and a fix (issue 25, docs/benchmarks.md).
--
-- 1. The cluster's level: per peer and minute, and per peer and hour for the histograms, without the job, so
--    that the cluster stats of a day read about 1,440 cells per peer and a day's histogram bins per peer,
--    however many jobs ran. 0009's trigger keeps them too, in the same statement, whichever release writes
--    the rows. They answer the cluster stats that no token's job scope narrows; a scoped query reads the job
--    tables. (One trigger body rather than triggers on the job tables: SQLite compiles every trigger a
--    statement may fire when it prepares the statement, and nested triggers made each write's prepare several
--    times as long.)
-- 2. A removed largest value (a pruned row, an end record replaced by a shorter one) made 0009's trigger
--    re-read the largest of the cell's rows by scanning the cell: with tens of thousands of items in one
--    minute of one job on one peer, pruning them cost a scan of the cell per row. The indexes below hold each
--    cell's values in order, so the re-read is one look at the end of the cell's range; the same for a peer's
--    largest, read off its jobs' cells.

CREATE INDEX job_execution_log_cell_duration ON JOB_EXECUTION_LOG
    (job_name, instance_id, start_time / 60000000, duration_ms) WHERE complete_time IS NOT NULL;
CREATE INDEX job_execution_log_cell_lateness ON JOB_EXECUTION_LOG
    (job_name, instance_id, start_time / 60000000, (start_time - scheduled_at) / 1000) WHERE scheduled_at IS NOT NULL;
CREATE INDEX execution_stats_minute_peer_duration ON EXECUTION_STATS_MINUTE (minute, instance_id, dur_max);
CREATE INDEX execution_stats_minute_peer_lateness ON EXECUTION_STATS_MINUTE (minute, instance_id, late_max);

-- Per peer and minute of start_time: the sums of the peer's cells in EXECUTION_STATS_MINUTE (peer_fires is
-- the sum of its jobs' distinct fires), the largest of their largest values.
CREATE TABLE EXECUTION_PEER_STATS_MINUTE (
    minute      INTEGER NOT NULL,
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
    PRIMARY KEY (minute, instance_id)
) STRICT, WITHOUT ROWID;

-- Per minute: the distinct fires of every job (the sum of EXECUTION_FIRES_MINUTE's jobs).
CREATE TABLE EXECUTION_CLUSTER_FIRES_MINUTE (
    minute INTEGER NOT NULL PRIMARY KEY,
    fires  INTEGER NOT NULL DEFAULT 0
) STRICT, WITHOUT ROWID;

-- Per hour and peer: EXECUTION_STATS_HIST's bins added up over the jobs.
CREATE TABLE EXECUTION_PEER_STATS_HIST (
    hour        INTEGER NOT NULL,
    instance_id TEXT    NOT NULL,
    kind        TEXT    NOT NULL,
    bin         INTEGER NOT NULL,
    n           INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (hour, instance_id, kind, bin)
) STRICT, WITHOUT ROWID;

-- The cells already there.
INSERT INTO EXECUTION_PEER_STATS_MINUTE
SELECT minute, instance_id, SUM(peer_fires), SUM(items), SUM(success), SUM(failure), SUM(running), SUM(misfire),
    SUM(failover), SUM(manual), SUM(dur_n), SUM(dur_sum), MAX(dur_max), SUM(late_n), SUM(late_sum), MAX(late_max),
    MAX(hostname), MAX(ip)
FROM EXECUTION_STATS_MINUTE GROUP BY 1, 2;
INSERT INTO EXECUTION_CLUSTER_FIRES_MINUTE SELECT minute, SUM(fires) FROM EXECUTION_FIRES_MINUTE GROUP BY 1;
INSERT INTO EXECUTION_PEER_STATS_HIST SELECT hour, instance_id, kind, bin, SUM(n) FROM EXECUTION_STATS_HIST GROUP BY 1, 2, 3, 4;

-- 0009's trigger with the peers' level, and re-reads through the indexes above.
DROP TRIGGER execution_stats_change;
CREATE TRIGGER execution_stats_change INSTEAD OF INSERT ON EXECUTION_STATS_CHANGE BEGIN
    INSERT INTO EXECUTION_STATS_MINUTE (job_name, minute, instance_id, peer_fires, items, success, failure, running,
        misfire, failover, manual, dur_n, dur_sum, dur_max, late_n, late_sum, late_max, hostname, ip)
    SELECT NEW.job_name, NEW.start_time / 60000000, NEW.instance_id,
        CASE WHEN NEW.scheduled_at IS NOT NULL AND NOT EXISTS (SELECT 1 FROM JOB_EXECUTION_LOG e INDEXED BY job_execution_log_fire_peer
            WHERE e.job_name = NEW.job_name AND e.scheduled_at = NEW.scheduled_at AND e.instance_id = NEW.instance_id
            AND e.start_time >= NEW.start_time / 60000000 * 60000000
            AND e.start_time < (NEW.start_time / 60000000 + 1) * 60000000 AND e.id <> NEW.id) THEN NEW.sign ELSE 0 END,
        NEW.sign, NEW.sign * (NEW.complete_time IS NOT NULL AND NEW.is_success <> 0),
        NEW.sign * (NEW.complete_time IS NOT NULL AND NEW.is_success = 0), NEW.sign * (NEW.complete_time IS NULL),
        NEW.sign * (NEW.execution_source = 'MISFIRE'), NEW.sign * (NEW.execution_source = 'FAILOVER'),
        NEW.sign * (NEW.execution_source = 'MANUAL'),
        NEW.sign * (NEW.complete_time IS NOT NULL), CASE WHEN NEW.complete_time IS NOT NULL THEN NEW.sign * NEW.duration_ms ELSE 0 END,
        CASE WHEN NEW.sign > 0 AND NEW.complete_time IS NOT NULL THEN NEW.duration_ms END,
        NEW.sign * (NEW.scheduled_at IS NOT NULL),
        CASE WHEN NEW.scheduled_at IS NOT NULL THEN NEW.sign * ((NEW.start_time - NEW.scheduled_at) / 1000) ELSE 0 END,
        CASE WHEN NEW.sign > 0 AND NEW.scheduled_at IS NOT NULL THEN (NEW.start_time - NEW.scheduled_at) / 1000 END,
        NEW.hostname, NEW.ip
    WHERE true
    ON CONFLICT (job_name, minute, instance_id) DO UPDATE SET peer_fires = peer_fires + excluded.peer_fires,
        items = items + excluded.items, success = success + excluded.success, failure = failure + excluded.failure,
        running = running + excluded.running, misfire = misfire + excluded.misfire,
        failover = failover + excluded.failover, manual = manual + excluded.manual,
        dur_n = dur_n + excluded.dur_n, dur_sum = dur_sum + excluded.dur_sum,
        dur_max = CASE WHEN dur_max IS NULL OR excluded.dur_max > dur_max THEN excluded.dur_max ELSE dur_max END,
        late_n = late_n + excluded.late_n, late_sum = late_sum + excluded.late_sum,
        late_max = CASE WHEN late_max IS NULL OR excluded.late_max > late_max THEN excluded.late_max ELSE late_max END,
        hostname = MAX(hostname, excluded.hostname), ip = MAX(ip, excluded.ip);

    -- the same for the peer, every job added up
    INSERT INTO EXECUTION_PEER_STATS_MINUTE (minute, instance_id, peer_fires, items, success, failure, running,
        misfire, failover, manual, dur_n, dur_sum, dur_max, late_n, late_sum, late_max, hostname, ip)
    SELECT NEW.start_time / 60000000, NEW.instance_id,
        CASE WHEN NEW.scheduled_at IS NOT NULL AND NOT EXISTS (SELECT 1 FROM JOB_EXECUTION_LOG e INDEXED BY job_execution_log_fire_peer
            WHERE e.job_name = NEW.job_name AND e.scheduled_at = NEW.scheduled_at AND e.instance_id = NEW.instance_id
            AND e.start_time >= NEW.start_time / 60000000 * 60000000
            AND e.start_time < (NEW.start_time / 60000000 + 1) * 60000000 AND e.id <> NEW.id) THEN NEW.sign ELSE 0 END,
        NEW.sign, NEW.sign * (NEW.complete_time IS NOT NULL AND NEW.is_success <> 0),
        NEW.sign * (NEW.complete_time IS NOT NULL AND NEW.is_success = 0), NEW.sign * (NEW.complete_time IS NULL),
        NEW.sign * (NEW.execution_source = 'MISFIRE'), NEW.sign * (NEW.execution_source = 'FAILOVER'),
        NEW.sign * (NEW.execution_source = 'MANUAL'),
        NEW.sign * (NEW.complete_time IS NOT NULL), CASE WHEN NEW.complete_time IS NOT NULL THEN NEW.sign * NEW.duration_ms ELSE 0 END,
        CASE WHEN NEW.sign > 0 AND NEW.complete_time IS NOT NULL THEN NEW.duration_ms END,
        NEW.sign * (NEW.scheduled_at IS NOT NULL),
        CASE WHEN NEW.scheduled_at IS NOT NULL THEN NEW.sign * ((NEW.start_time - NEW.scheduled_at) / 1000) ELSE 0 END,
        CASE WHEN NEW.sign > 0 AND NEW.scheduled_at IS NOT NULL THEN (NEW.start_time - NEW.scheduled_at) / 1000 END,
        NEW.hostname, NEW.ip
    WHERE true
    ON CONFLICT (minute, instance_id) DO UPDATE SET peer_fires = peer_fires + excluded.peer_fires,
        items = items + excluded.items, success = success + excluded.success, failure = failure + excluded.failure,
        running = running + excluded.running, misfire = misfire + excluded.misfire,
        failover = failover + excluded.failover, manual = manual + excluded.manual,
        dur_n = dur_n + excluded.dur_n, dur_sum = dur_sum + excluded.dur_sum,
        dur_max = CASE WHEN dur_max IS NULL OR excluded.dur_max > dur_max THEN excluded.dur_max ELSE dur_max END,
        late_n = late_n + excluded.late_n, late_sum = late_sum + excluded.late_sum,
        late_max = CASE WHEN late_max IS NULL OR excluded.late_max > late_max THEN excluded.late_max ELSE late_max END,
        hostname = MAX(hostname, excluded.hostname), ip = MAX(ip, excluded.ip);

    -- a removed value that was the largest: the largest of the cell's rows left, read off the end of the
    -- cell's range in the indexes below (it was a scan of the cell's rows)
    UPDATE EXECUTION_STATS_MINUTE SET dur_max = (SELECT MAX(e.duration_ms) FROM JOB_EXECUTION_LOG e
            INDEXED BY job_execution_log_cell_duration WHERE e.job_name = NEW.job_name
            AND e.instance_id = NEW.instance_id AND e.start_time / 60000000 = NEW.start_time / 60000000
            AND e.complete_time IS NOT NULL)
        WHERE NEW.sign < 0 AND NEW.complete_time IS NOT NULL AND job_name = NEW.job_name
            AND minute = NEW.start_time / 60000000 AND instance_id = NEW.instance_id AND NEW.duration_ms >= dur_max
            AND (NEW.repl_d IS NULL OR NEW.repl_d < NEW.duration_ms);
    UPDATE EXECUTION_STATS_MINUTE SET late_max = (SELECT MAX((e.start_time - e.scheduled_at) / 1000) FROM JOB_EXECUTION_LOG e
            INDEXED BY job_execution_log_cell_lateness WHERE e.job_name = NEW.job_name
            AND e.instance_id = NEW.instance_id AND e.start_time / 60000000 = NEW.start_time / 60000000
            AND e.scheduled_at IS NOT NULL)
        WHERE NEW.sign < 0 AND NEW.scheduled_at IS NOT NULL AND job_name = NEW.job_name
            AND minute = NEW.start_time / 60000000 AND instance_id = NEW.instance_id
            AND (NEW.start_time - NEW.scheduled_at) / 1000 >= late_max
            AND (NEW.repl_l IS NULL OR NEW.repl_l < (NEW.start_time - NEW.scheduled_at) / 1000);

    -- the peer's: the largest of its jobs' cells (which the statements above keep right)
    UPDATE EXECUTION_PEER_STATS_MINUTE SET dur_max = (SELECT MAX(c.dur_max) FROM EXECUTION_STATS_MINUTE c
            INDEXED BY execution_stats_minute_peer_duration
            WHERE c.minute = NEW.start_time / 60000000 AND c.instance_id = NEW.instance_id)
        WHERE NEW.sign < 0 AND NEW.complete_time IS NOT NULL AND minute = NEW.start_time / 60000000
            AND instance_id = NEW.instance_id AND NEW.duration_ms >= dur_max
            AND (NEW.repl_d IS NULL OR NEW.repl_d < NEW.duration_ms);
    UPDATE EXECUTION_PEER_STATS_MINUTE SET late_max = (SELECT MAX(c.late_max) FROM EXECUTION_STATS_MINUTE c
            INDEXED BY execution_stats_minute_peer_lateness
            WHERE c.minute = NEW.start_time / 60000000 AND c.instance_id = NEW.instance_id)
        WHERE NEW.sign < 0 AND NEW.scheduled_at IS NOT NULL AND minute = NEW.start_time / 60000000
            AND instance_id = NEW.instance_id AND (NEW.start_time - NEW.scheduled_at) / 1000 >= late_max
            AND (NEW.repl_l IS NULL OR NEW.repl_l < (NEW.start_time - NEW.scheduled_at) / 1000);

    INSERT INTO EXECUTION_FIRES_MINUTE (job_name, minute, fires)
    SELECT NEW.job_name, NEW.start_time / 60000000, NEW.sign
    WHERE NEW.scheduled_at IS NOT NULL AND NOT EXISTS (SELECT 1 FROM JOB_EXECUTION_LOG e INDEXED BY job_execution_log_fire
        WHERE e.job_name = NEW.job_name AND e.scheduled_at = NEW.scheduled_at
        AND e.start_time >= NEW.start_time / 60000000 * 60000000
        AND e.start_time < (NEW.start_time / 60000000 + 1) * 60000000 AND e.id <> NEW.id)
    ON CONFLICT (job_name, minute) DO UPDATE SET fires = fires + excluded.fires;
    INSERT INTO EXECUTION_CLUSTER_FIRES_MINUTE (minute, fires)
    SELECT NEW.start_time / 60000000, NEW.sign
    WHERE NEW.scheduled_at IS NOT NULL AND NOT EXISTS (SELECT 1 FROM JOB_EXECUTION_LOG e INDEXED BY job_execution_log_fire
        WHERE e.job_name = NEW.job_name AND e.scheduled_at = NEW.scheduled_at
        AND e.start_time >= NEW.start_time / 60000000 * 60000000
        AND e.start_time < (NEW.start_time / 60000000 + 1) * 60000000 AND e.id <> NEW.id)
    ON CONFLICT (minute) DO UPDATE SET fires = fires + excluded.fires;

    INSERT INTO EXECUTION_STATS_HIST (job_name, hour, instance_id, kind, bin, n)
    SELECT NEW.job_name, NEW.start_time / 3600000000, NEW.instance_id, kind, CASE WHEN v < 1000 THEN v WHEN v < 10000 THEN v / 10 * 10 WHEN v < 100000 THEN v / 100 * 100 WHEN v < 1000000 THEN v / 1000 * 1000 WHEN v < 10000000 THEN v / 10000 * 10000 WHEN v < 100000000 THEN v / 100000 * 100000 WHEN v < 1000000000 THEN v / 1000000 * 1000000 WHEN v < 10000000000 THEN v / 10000000 * 10000000 WHEN v < 100000000000 THEN v / 100000000 * 100000000 WHEN v < 1000000000000 THEN v / 1000000000 * 1000000000 ELSE v / 10000000000 * 10000000000 END, NEW.sign FROM (
        SELECT 'd' AS kind, NEW.duration_ms AS v WHERE NEW.complete_time IS NOT NULL
        UNION ALL
        SELECT 'l', (NEW.start_time - NEW.scheduled_at) / 1000 WHERE NEW.scheduled_at IS NOT NULL)
    WHERE true
    ON CONFLICT (job_name, hour, instance_id, kind, bin) DO UPDATE SET n = n + excluded.n;
    INSERT INTO EXECUTION_PEER_STATS_HIST (hour, instance_id, kind, bin, n)
    SELECT NEW.start_time / 3600000000, NEW.instance_id, kind, CASE WHEN v < 1000 THEN v WHEN v < 10000 THEN v / 10 * 10 WHEN v < 100000 THEN v / 100 * 100 WHEN v < 1000000 THEN v / 1000 * 1000 WHEN v < 10000000 THEN v / 10000 * 10000 WHEN v < 100000000 THEN v / 100000 * 100000 WHEN v < 1000000000 THEN v / 1000000 * 1000000 WHEN v < 10000000000 THEN v / 10000000 * 10000000 WHEN v < 100000000000 THEN v / 100000000 * 100000000 WHEN v < 1000000000000 THEN v / 1000000000 * 1000000000 ELSE v / 10000000000 * 10000000000 END, NEW.sign FROM (
        SELECT 'd' AS kind, NEW.duration_ms AS v WHERE NEW.complete_time IS NOT NULL
        UNION ALL
        SELECT 'l', (NEW.start_time - NEW.scheduled_at) / 1000 WHERE NEW.scheduled_at IS NOT NULL)
    WHERE true
    ON CONFLICT (hour, instance_id, kind, bin) DO UPDATE SET n = n + excluded.n;
END;
