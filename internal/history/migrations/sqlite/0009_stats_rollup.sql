-- The stats' rollup (issue 25, docs/benchmarks.md): what the console's charts aggregate, kept per minute and
-- per hour by triggers on JOB_EXECUTION_LOG, so that a day's stats read about 1,440 rows per job and peer
-- instead of every execution. The triggers run in the transaction that writes (or prunes) the executions,
-- whichever peer or release writes them; the migration fills the tables from the rows already there.
-- Minutes and hours are counted from the Unix epoch (start_time / 60,000,000 and / 3,600,000,000).

-- Per job, minute of start_time and peer: the counts, sums and largest values of stats.go's Aggregate.
-- peer_fires counts the distinct fires (scheduled_at) of the cell's rows.
CREATE TABLE EXECUTION_STATS_MINUTE (
    job_name    TEXT    NOT NULL,
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
    PRIMARY KEY (job_name, minute, instance_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX execution_stats_minute_minute ON EXECUTION_STATS_MINUTE (minute);

-- Per job and minute: the distinct fires (scheduled_at) that have an item started in the minute.
CREATE TABLE EXECUTION_FIRES_MINUTE (
    job_name TEXT    NOT NULL,
    minute   INTEGER NOT NULL,
    fires    INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (job_name, minute)
) STRICT, WITHOUT ROWID;
CREATE INDEX execution_fires_minute_minute ON EXECUTION_FIRES_MINUTE (minute);

-- Per job, hour of start_time and peer: how many durations (kind 'd', ended items) and latenesses (kind 'l')
-- fall in each bin, a bin being the value rounded down to 3 significant digits (stats.go's binSQL), so the
-- percentiles read off the rollup are those read off the rows.
CREATE TABLE EXECUTION_STATS_HIST (
    job_name    TEXT    NOT NULL,
    hour        INTEGER NOT NULL,
    instance_id TEXT    NOT NULL,
    kind        TEXT    NOT NULL,
    bin         INTEGER NOT NULL,
    n           INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (job_name, hour, instance_id, kind, bin)
) STRICT, WITHOUT ROWID;
CREATE INDEX execution_stats_hist_hour ON EXECUTION_STATS_HIST (hour);

-- The triggers' lookups: is there another item of this fire in this minute (on this peer)?
CREATE INDEX job_execution_log_fire_peer ON JOB_EXECUTION_LOG (job_name, scheduled_at, instance_id, start_time);

-- The rows already there.
INSERT INTO EXECUTION_STATS_MINUTE
SELECT job_name, start_time / 60000000, instance_id, COUNT(DISTINCT scheduled_at), COUNT(*),
    SUM(complete_time IS NOT NULL AND is_success <> 0), SUM(complete_time IS NOT NULL AND is_success = 0),
    SUM(complete_time IS NULL), SUM(execution_source = 'MISFIRE'), SUM(execution_source = 'FAILOVER'),
    SUM(execution_source = 'MANUAL'),
    SUM(complete_time IS NOT NULL), COALESCE(SUM(CASE WHEN complete_time IS NOT NULL THEN duration_ms END), 0),
    MAX(CASE WHEN complete_time IS NOT NULL THEN duration_ms END),
    SUM(scheduled_at IS NOT NULL), COALESCE(SUM((start_time - scheduled_at) / 1000), 0), MAX((start_time - scheduled_at) / 1000),
    MAX(hostname), MAX(ip)
FROM JOB_EXECUTION_LOG GROUP BY 1, 2, 3;

INSERT INTO EXECUTION_FIRES_MINUTE
SELECT job_name, start_time / 60000000, COUNT(DISTINCT scheduled_at) FROM JOB_EXECUTION_LOG GROUP BY 1, 2;

INSERT INTO EXECUTION_STATS_HIST
SELECT job_name, hour, instance_id, kind, CASE WHEN v < 1000 THEN v WHEN v < 10000 THEN v / 10 * 10 WHEN v < 100000 THEN v / 100 * 100 WHEN v < 1000000 THEN v / 1000 * 1000 WHEN v < 10000000 THEN v / 10000 * 10000 WHEN v < 100000000 THEN v / 100000 * 100000 WHEN v < 1000000000 THEN v / 1000000 * 1000000 WHEN v < 10000000000 THEN v / 10000000 * 10000000 WHEN v < 100000000000 THEN v / 100000000 * 100000000 WHEN v < 1000000000000 THEN v / 1000000000 * 1000000000 ELSE v / 10000000000 * 10000000000 END, COUNT(*) FROM (
    SELECT job_name, start_time / 3600000000 AS hour, instance_id, 'd' AS kind, duration_ms AS v
    FROM JOB_EXECUTION_LOG WHERE complete_time IS NOT NULL
    UNION ALL
    SELECT job_name, start_time / 3600000000, instance_id, 'l', (start_time - scheduled_at) / 1000
    FROM JOB_EXECUTION_LOG WHERE scheduled_at IS NOT NULL
) GROUP BY 1, 2, 3, 4, 5;

-- One change of the rollup: an execution row added (sign 1) or removed (sign -1), in the state the table is
-- in after the change. Inserting into this view applies the change; the table's triggers below do. For a
-- removal by an update, repl_d and repl_l are the new version's duration and lateness when it stays in the
-- same cell: a removed largest value replaced by one as large needs no re-reading of the cell.
CREATE VIEW EXECUTION_STATS_CHANGE AS SELECT 0 AS sign, '' AS id, '' AS job_name, '' AS instance_id,
    0 AS start_time, NULL AS scheduled_at, NULL AS complete_time, 0 AS is_success, '' AS execution_source,
    0 AS duration_ms, '' AS hostname, '' AS ip, NULL AS repl_d, NULL AS repl_l WHERE 0;

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

    -- a removed value that was the largest: the largest of the cell's rows left
    UPDATE EXECUTION_STATS_MINUTE SET dur_max = (SELECT MAX(e.duration_ms) FROM JOB_EXECUTION_LOG e
            WHERE e.job_name = NEW.job_name AND e.start_time >= NEW.start_time / 60000000 * 60000000
            AND e.start_time < (NEW.start_time / 60000000 + 1) * 60000000 AND e.instance_id = NEW.instance_id
            AND e.complete_time IS NOT NULL)
        WHERE NEW.sign < 0 AND NEW.complete_time IS NOT NULL AND job_name = NEW.job_name
            AND minute = NEW.start_time / 60000000 AND instance_id = NEW.instance_id AND NEW.duration_ms >= dur_max
            AND (NEW.repl_d IS NULL OR NEW.repl_d < NEW.duration_ms);
    UPDATE EXECUTION_STATS_MINUTE SET late_max = (SELECT MAX((e.start_time - e.scheduled_at) / 1000) FROM JOB_EXECUTION_LOG e
            WHERE e.job_name = NEW.job_name AND e.start_time >= NEW.start_time / 60000000 * 60000000
            AND e.start_time < (NEW.start_time / 60000000 + 1) * 60000000 AND e.instance_id = NEW.instance_id)
        WHERE NEW.sign < 0 AND NEW.scheduled_at IS NOT NULL AND job_name = NEW.job_name
            AND minute = NEW.start_time / 60000000 AND instance_id = NEW.instance_id
            AND (NEW.start_time - NEW.scheduled_at) / 1000 >= late_max
            AND (NEW.repl_l IS NULL OR NEW.repl_l < (NEW.start_time - NEW.scheduled_at) / 1000);

    INSERT INTO EXECUTION_FIRES_MINUTE (job_name, minute, fires)
    SELECT NEW.job_name, NEW.start_time / 60000000, NEW.sign
    WHERE NEW.scheduled_at IS NOT NULL AND NOT EXISTS (SELECT 1 FROM JOB_EXECUTION_LOG e INDEXED BY job_execution_log_fire
        WHERE e.job_name = NEW.job_name AND e.scheduled_at = NEW.scheduled_at
        AND e.start_time >= NEW.start_time / 60000000 * 60000000
        AND e.start_time < (NEW.start_time / 60000000 + 1) * 60000000 AND e.id <> NEW.id)
    ON CONFLICT (job_name, minute) DO UPDATE SET fires = fires + excluded.fires;

    INSERT INTO EXECUTION_STATS_HIST (job_name, hour, instance_id, kind, bin, n)
    SELECT NEW.job_name, NEW.start_time / 3600000000, NEW.instance_id, kind, CASE WHEN v < 1000 THEN v WHEN v < 10000 THEN v / 10 * 10 WHEN v < 100000 THEN v / 100 * 100 WHEN v < 1000000 THEN v / 1000 * 1000 WHEN v < 10000000 THEN v / 10000 * 10000 WHEN v < 100000000 THEN v / 100000 * 100000 WHEN v < 1000000000 THEN v / 1000000 * 1000000 WHEN v < 10000000000 THEN v / 10000000 * 10000000 WHEN v < 100000000000 THEN v / 100000000 * 100000000 WHEN v < 1000000000000 THEN v / 1000000000 * 1000000000 ELSE v / 10000000000 * 10000000000 END, NEW.sign FROM (
        SELECT 'd' AS kind, NEW.duration_ms AS v WHERE NEW.complete_time IS NOT NULL
        UNION ALL
        SELECT 'l', (NEW.start_time - NEW.scheduled_at) / 1000 WHERE NEW.scheduled_at IS NOT NULL)
    WHERE true
    ON CONFLICT (job_name, hour, instance_id, kind, bin) DO UPDATE SET n = n + excluded.n;
END;

CREATE TRIGGER job_execution_log_stats_insert AFTER INSERT ON JOB_EXECUTION_LOG BEGIN
    INSERT INTO EXECUTION_STATS_CHANGE VALUES (1, NEW.id, NEW.job_name, NEW.instance_id, NEW.start_time, NEW.scheduled_at,
        NEW.complete_time, NEW.is_success, NEW.execution_source, NEW.duration_ms, NEW.hostname, NEW.ip, NULL, NULL);
END;

-- Only the updates that change what the rollup counts (not an async item's heartbeats, say).
CREATE TRIGGER job_execution_log_stats_update AFTER UPDATE ON JOB_EXECUTION_LOG
WHEN OLD.job_name IS NOT NEW.job_name OR OLD.instance_id IS NOT NEW.instance_id OR OLD.start_time IS NOT NEW.start_time
    OR OLD.scheduled_at IS NOT NEW.scheduled_at OR OLD.complete_time IS NOT NEW.complete_time
    OR OLD.is_success IS NOT NEW.is_success OR OLD.execution_source IS NOT NEW.execution_source
    OR OLD.duration_ms IS NOT NEW.duration_ms OR OLD.hostname IS NOT NEW.hostname OR OLD.ip IS NOT NEW.ip
BEGIN
    INSERT INTO EXECUTION_STATS_CHANGE SELECT -1, OLD.id, OLD.job_name, OLD.instance_id, OLD.start_time, OLD.scheduled_at,
        OLD.complete_time, OLD.is_success, OLD.execution_source, OLD.duration_ms, OLD.hostname, OLD.ip,
        CASE WHEN same AND NEW.complete_time IS NOT NULL THEN NEW.duration_ms END,
        CASE WHEN same AND NEW.scheduled_at IS NOT NULL THEN (NEW.start_time - NEW.scheduled_at) / 1000 END
    FROM (SELECT OLD.job_name = NEW.job_name AND OLD.instance_id = NEW.instance_id
        AND OLD.start_time / 60000000 = NEW.start_time / 60000000 AS same);
    INSERT INTO EXECUTION_STATS_CHANGE VALUES (1, NEW.id, NEW.job_name, NEW.instance_id, NEW.start_time, NEW.scheduled_at,
        NEW.complete_time, NEW.is_success, NEW.execution_source, NEW.duration_ms, NEW.hostname, NEW.ip, NULL, NULL);
END;

CREATE TRIGGER job_execution_log_stats_delete AFTER DELETE ON JOB_EXECUTION_LOG BEGIN
    INSERT INTO EXECUTION_STATS_CHANGE VALUES (-1, OLD.id, OLD.job_name, OLD.instance_id, OLD.start_time, OLD.scheduled_at,
        OLD.complete_time, OLD.is_success, OLD.execution_source, OLD.duration_ms, OLD.hostname, OLD.ip, NULL, NULL);
END;
