-- The stats' rollup (issue 25, docs/benchmarks.md): what the console's charts aggregate, kept per minute and
-- per hour by statement triggers on JOB_EXECUTION_LOG, so that a day's stats read about 1,440 rows per job and
-- peer instead of every execution. The triggers run in the transaction that writes (or prunes) the
-- executions, whichever peer or release writes them; the migration fills the tables from the rows already
-- there. Minutes and hours are counted from the Unix epoch, as integers.

-- Per job, minute of start_time and peer: the counts, sums and largest values of stats.go's Aggregate.
-- peer_fires counts the distinct fires (scheduled_at) of the cell's rows.
CREATE TABLE EXECUTION_STATS_MINUTE (
    job_name    TEXT   NOT NULL,
    minute      BIGINT NOT NULL,
    instance_id TEXT   NOT NULL,
    peer_fires  BIGINT NOT NULL DEFAULT 0,
    items       BIGINT NOT NULL DEFAULT 0,
    success     BIGINT NOT NULL DEFAULT 0,
    failure     BIGINT NOT NULL DEFAULT 0,
    running     BIGINT NOT NULL DEFAULT 0,
    misfire     BIGINT NOT NULL DEFAULT 0,
    failover    BIGINT NOT NULL DEFAULT 0,
    manual      BIGINT NOT NULL DEFAULT 0,
    dur_n       BIGINT NOT NULL DEFAULT 0,
    dur_sum     BIGINT NOT NULL DEFAULT 0,
    dur_max     BIGINT,
    late_n      BIGINT NOT NULL DEFAULT 0,
    late_sum    BIGINT NOT NULL DEFAULT 0,
    late_max    BIGINT,
    hostname    TEXT   NOT NULL DEFAULT '',
    ip          TEXT   NOT NULL DEFAULT '',
    PRIMARY KEY (job_name, minute, instance_id)
);
CREATE INDEX execution_stats_minute_minute ON EXECUTION_STATS_MINUTE (minute);

-- Per job and minute: the distinct fires (scheduled_at) that have an item started in the minute.
CREATE TABLE EXECUTION_FIRES_MINUTE (
    job_name TEXT   NOT NULL,
    minute   BIGINT NOT NULL,
    fires    BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (job_name, minute)
);
CREATE INDEX execution_fires_minute_minute ON EXECUTION_FIRES_MINUTE (minute);

-- Per job, hour of start_time and peer: how many durations (kind 'd', ended items) and latenesses (kind 'l')
-- fall in each bin, a bin being the value rounded down to 3 significant digits (stats.go's binSQL), so the
-- percentiles read off the rollup are those read off the rows.
CREATE TABLE EXECUTION_STATS_HIST (
    job_name    TEXT   NOT NULL,
    hour        BIGINT NOT NULL,
    instance_id TEXT   NOT NULL,
    kind        TEXT   NOT NULL,
    bin         BIGINT NOT NULL,
    n           BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (job_name, hour, instance_id, kind, bin)
);
CREATE INDEX execution_stats_hist_hour ON EXECUTION_STATS_HIST (hour);

-- The triggers' lookups: is there another item of this fire in this minute (on this peer)?
CREATE INDEX job_execution_log_fire_peer ON JOB_EXECUTION_LOG (job_name, scheduled_at, instance_id, start_time);

-- The rows already there.
INSERT INTO EXECUTION_STATS_MINUTE
SELECT job_name, CAST(EXTRACT(EPOCH FROM start_time) * 1000000 AS BIGINT) / 60000000, instance_id, COUNT(DISTINCT scheduled_at), COUNT(*),
    COUNT(*) FILTER (WHERE complete_time IS NOT NULL AND is_success), COUNT(*) FILTER (WHERE complete_time IS NOT NULL AND NOT is_success),
    COUNT(*) FILTER (WHERE complete_time IS NULL), COUNT(*) FILTER (WHERE execution_source = 'MISFIRE'),
    COUNT(*) FILTER (WHERE execution_source = 'FAILOVER'), COUNT(*) FILTER (WHERE execution_source = 'MANUAL'),
    COUNT(*) FILTER (WHERE complete_time IS NOT NULL), COALESCE(SUM(duration_ms) FILTER (WHERE complete_time IS NOT NULL), 0),
    MAX(duration_ms) FILTER (WHERE complete_time IS NOT NULL),
    COUNT(scheduled_at), COALESCE(SUM((CAST(EXTRACT(EPOCH FROM start_time) * 1000000 AS BIGINT) - CAST(EXTRACT(EPOCH FROM scheduled_at) * 1000000 AS BIGINT)) / 1000), 0), MAX((CAST(EXTRACT(EPOCH FROM start_time) * 1000000 AS BIGINT) - CAST(EXTRACT(EPOCH FROM scheduled_at) * 1000000 AS BIGINT)) / 1000),
    MAX(hostname), MAX(ip)
FROM JOB_EXECUTION_LOG GROUP BY 1, 2, 3;

INSERT INTO EXECUTION_FIRES_MINUTE
SELECT job_name, CAST(EXTRACT(EPOCH FROM start_time) * 1000000 AS BIGINT) / 60000000, COUNT(DISTINCT scheduled_at) FROM JOB_EXECUTION_LOG GROUP BY 1, 2;

INSERT INTO EXECUTION_STATS_HIST
SELECT job_name, hour, instance_id, kind, CASE WHEN v < 1000 THEN v WHEN v < 10000 THEN v / 10 * 10 WHEN v < 100000 THEN v / 100 * 100 WHEN v < 1000000 THEN v / 1000 * 1000 WHEN v < 10000000 THEN v / 10000 * 10000 WHEN v < 100000000 THEN v / 100000 * 100000 WHEN v < 1000000000 THEN v / 1000000 * 1000000 WHEN v < 10000000000 THEN v / 10000000 * 10000000 WHEN v < 100000000000 THEN v / 100000000 * 100000000 WHEN v < 1000000000000 THEN v / 1000000000 * 1000000000 ELSE v / 10000000000 * 10000000000 END, COUNT(*) FROM (
    SELECT job_name, CAST(EXTRACT(EPOCH FROM start_time) * 1000000 AS BIGINT) / 3600000000 AS hour, instance_id, 'd' AS kind, duration_ms AS v
    FROM JOB_EXECUTION_LOG WHERE complete_time IS NOT NULL
    UNION ALL
    SELECT job_name, CAST(EXTRACT(EPOCH FROM start_time) * 1000000 AS BIGINT) / 3600000000, instance_id, 'l', (CAST(EXTRACT(EPOCH FROM start_time) * 1000000 AS BIGINT) - CAST(EXTRACT(EPOCH FROM scheduled_at) * 1000000 AS BIGINT)) / 1000
    FROM JOB_EXECUTION_LOG WHERE scheduled_at IS NOT NULL
) h GROUP BY 1, 2, 3, 4, 5;

-- The rows a statement added (sign 1) and removed (sign -1), with their rollup keys and values.
CREATE FUNCTION ejs_stats_changes(nw JOB_EXECUTION_LOG[], od JOB_EXECUTION_LOG[])
RETURNS TABLE (sign INT, id TEXT, job_name TEXT, instance_id TEXT, minute BIGINT, hour BIGINT, scheduled_at TIMESTAMPTZ,
    complete_time TIMESTAMPTZ, is_success BOOLEAN, src TEXT, hostname TEXT, ip TEXT, d BIGINT, l BIGINT)
LANGUAGE sql STABLE AS $$
    SELECT r.s, r.id, r.job_name, r.instance_id, u.us / 60000000, u.us / 3600000000, r.scheduled_at, r.complete_time,
        r.is_success, r.execution_source, r.hostname, r.ip,
        CASE WHEN r.complete_time IS NOT NULL THEN r.duration_ms END,
        CASE WHEN r.scheduled_at IS NOT NULL THEN (u.us - CAST(EXTRACT(EPOCH FROM r.scheduled_at) * 1000000 AS BIGINT)) / 1000 END
    FROM (SELECT 1 AS s, n.* FROM unnest(nw) n UNION ALL SELECT -1, o.* FROM unnest(od) o) r,
        LATERAL (SELECT CAST(EXTRACT(EPOCH FROM r.start_time) * 1000000 AS BIGINT) AS us) u
$$;

-- Applies a statement's changes to the rollup. Writers take turns (one advisory lock, held to the end of the
-- transaction), so that each sees the other's rows when it counts distinct fires. One lock rather than one
-- per job and hour: an upsert's INSERT and UPDATE triggers run one after the other, and two writers taking
-- two sets of keys each could deadlock; the rows' own writes are done before the triggers run.
CREATE FUNCTION ejs_stats_apply(nw JOB_EXECUTION_LOG[], od JOB_EXECUTION_LOG[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF cardinality(nw) + cardinality(od) = 0 THEN
        RETURN;
    END IF;
    PERFORM pg_advisory_xact_lock(7307779168248034672); -- 'ejrollup'

    INSERT INTO EXECUTION_STATS_MINUTE AS t (job_name, minute, instance_id, items, success, failure, running, misfire,
        failover, manual, dur_n, dur_sum, dur_max, late_n, late_sum, late_max, hostname, ip)
    SELECT c.job_name, c.minute, c.instance_id, SUM(c.sign),
        COALESCE(SUM(c.sign) FILTER (WHERE c.complete_time IS NOT NULL AND c.is_success), 0),
        COALESCE(SUM(c.sign) FILTER (WHERE c.complete_time IS NOT NULL AND NOT c.is_success), 0),
        COALESCE(SUM(c.sign) FILTER (WHERE c.complete_time IS NULL), 0),
        COALESCE(SUM(c.sign) FILTER (WHERE c.src = 'MISFIRE'), 0),
        COALESCE(SUM(c.sign) FILTER (WHERE c.src = 'FAILOVER'), 0),
        COALESCE(SUM(c.sign) FILTER (WHERE c.src = 'MANUAL'), 0),
        COALESCE(SUM(c.sign) FILTER (WHERE c.d IS NOT NULL), 0), COALESCE(SUM(c.sign * c.d), 0),
        MAX(c.d) FILTER (WHERE c.sign > 0),
        COALESCE(SUM(c.sign) FILTER (WHERE c.l IS NOT NULL), 0), COALESCE(SUM(c.sign * c.l), 0),
        MAX(c.l) FILTER (WHERE c.sign > 0),
        MAX(c.hostname), MAX(c.ip)
    FROM ejs_stats_changes(nw, od) c GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (job_name, minute, instance_id) DO UPDATE SET items = t.items + excluded.items,
        success = t.success + excluded.success, failure = t.failure + excluded.failure,
        running = t.running + excluded.running, misfire = t.misfire + excluded.misfire,
        failover = t.failover + excluded.failover, manual = t.manual + excluded.manual,
        dur_n = t.dur_n + excluded.dur_n, dur_sum = t.dur_sum + excluded.dur_sum,
        dur_max = GREATEST(t.dur_max, excluded.dur_max),
        late_n = t.late_n + excluded.late_n, late_sum = t.late_sum + excluded.late_sum,
        late_max = GREATEST(t.late_max, excluded.late_max),
        hostname = GREATEST(t.hostname, excluded.hostname), ip = GREATEST(t.ip, excluded.ip);

    -- removed values that were the largest: the largest of the cell's rows left (unless an update kept the
    -- row in its cell with a value as large)
    UPDATE EXECUTION_STATS_MINUTE t SET dur_max = (SELECT MAX(e.duration_ms) FROM JOB_EXECUTION_LOG e
            WHERE e.job_name = t.job_name AND e.start_time >= to_timestamp(t.minute * 60)
            AND e.start_time < to_timestamp((t.minute + 1) * 60) AND e.instance_id = t.instance_id
            AND e.complete_time IS NOT NULL)
    FROM (SELECT c.job_name, c.minute, c.instance_id, MAX(c.d) AS rd FROM ejs_stats_changes(nw, od) c
        WHERE c.sign < 0 AND NOT EXISTS (SELECT 1 FROM unnest(nw) n WHERE n.id = c.id AND n.job_name = c.job_name
            AND n.instance_id = c.instance_id AND CAST(EXTRACT(EPOCH FROM n.start_time) * 1000000 AS BIGINT) / 60000000 = c.minute
            AND n.complete_time IS NOT NULL AND n.duration_ms >= c.d)
        GROUP BY 1, 2, 3) r
    WHERE t.job_name = r.job_name AND t.minute = r.minute AND t.instance_id = r.instance_id AND r.rd >= t.dur_max;
    UPDATE EXECUTION_STATS_MINUTE t SET late_max = (SELECT MAX((CAST(EXTRACT(EPOCH FROM e.start_time) * 1000000 AS BIGINT)
                - CAST(EXTRACT(EPOCH FROM e.scheduled_at) * 1000000 AS BIGINT)) / 1000) FROM JOB_EXECUTION_LOG e
            WHERE e.job_name = t.job_name AND e.start_time >= to_timestamp(t.minute * 60)
            AND e.start_time < to_timestamp((t.minute + 1) * 60) AND e.instance_id = t.instance_id)
    FROM (SELECT c.job_name, c.minute, c.instance_id, MAX(c.l) AS rl FROM ejs_stats_changes(nw, od) c
        WHERE c.sign < 0 AND NOT EXISTS (SELECT 1 FROM unnest(nw) n WHERE n.id = c.id AND n.job_name = c.job_name
            AND n.instance_id = c.instance_id AND CAST(EXTRACT(EPOCH FROM n.start_time) * 1000000 AS BIGINT) / 60000000 = c.minute
            AND n.scheduled_at IS NOT NULL AND (CAST(EXTRACT(EPOCH FROM n.start_time) * 1000000 AS BIGINT) - CAST(EXTRACT(EPOCH FROM n.scheduled_at) * 1000000 AS BIGINT)) / 1000 >= c.l)
        GROUP BY 1, 2, 3) r
    WHERE t.job_name = r.job_name AND t.minute = r.minute AND t.instance_id = r.instance_id AND r.rl >= t.late_max;

    -- distinct fires: for each (job, fire, minute) and (job, fire, minute, peer) the statement touched, whether
    -- it has a row now, less whether it had one before (the rows now, but for those the statement wrote, and
    -- those it removed)
    INSERT INTO EXECUTION_FIRES_MINUTE AS t (job_name, minute, fires)
    SELECT k.job_name, k.minute, SUM(x.now - x.was) FROM
        (SELECT DISTINCT c.job_name, c.scheduled_at, c.minute FROM ejs_stats_changes(nw, od) c WHERE c.scheduled_at IS NOT NULL) k,
        LATERAL (SELECT
            CASE WHEN EXISTS (SELECT 1 FROM JOB_EXECUTION_LOG e WHERE e.job_name = k.job_name AND e.scheduled_at = k.scheduled_at
                AND e.start_time >= to_timestamp(k.minute * 60) AND e.start_time < to_timestamp((k.minute + 1) * 60)) THEN 1 ELSE 0 END AS now,
            CASE WHEN EXISTS (SELECT 1 FROM JOB_EXECUTION_LOG e WHERE e.job_name = k.job_name AND e.scheduled_at = k.scheduled_at
                AND e.start_time >= to_timestamp(k.minute * 60) AND e.start_time < to_timestamp((k.minute + 1) * 60)
                AND e.id NOT IN (SELECT n.id FROM unnest(nw) n))
            OR EXISTS (SELECT 1 FROM ejs_stats_changes('{}', od) o WHERE o.job_name = k.job_name AND o.scheduled_at = k.scheduled_at
                AND o.minute = k.minute) THEN 1 ELSE 0 END AS was) x
    GROUP BY 1, 2 HAVING SUM(x.now - x.was) <> 0 ORDER BY 1, 2
    ON CONFLICT (job_name, minute) DO UPDATE SET fires = t.fires + excluded.fires;

    UPDATE EXECUTION_STATS_MINUTE t SET peer_fires = t.peer_fires + f.delta FROM (
        SELECT k.job_name, k.minute, k.instance_id, SUM(x.now - x.was) AS delta FROM
            (SELECT DISTINCT c.job_name, c.scheduled_at, c.minute, c.instance_id FROM ejs_stats_changes(nw, od) c
                WHERE c.scheduled_at IS NOT NULL) k,
            LATERAL (SELECT
                CASE WHEN EXISTS (SELECT 1 FROM JOB_EXECUTION_LOG e WHERE e.job_name = k.job_name AND e.scheduled_at = k.scheduled_at
                    AND e.instance_id = k.instance_id
                    AND e.start_time >= to_timestamp(k.minute * 60) AND e.start_time < to_timestamp((k.minute + 1) * 60)) THEN 1 ELSE 0 END AS now,
                CASE WHEN EXISTS (SELECT 1 FROM JOB_EXECUTION_LOG e WHERE e.job_name = k.job_name AND e.scheduled_at = k.scheduled_at
                    AND e.instance_id = k.instance_id
                    AND e.start_time >= to_timestamp(k.minute * 60) AND e.start_time < to_timestamp((k.minute + 1) * 60)
                    AND e.id NOT IN (SELECT n.id FROM unnest(nw) n))
                OR EXISTS (SELECT 1 FROM ejs_stats_changes('{}', od) o WHERE o.job_name = k.job_name AND o.scheduled_at = k.scheduled_at
                    AND o.minute = k.minute AND o.instance_id = k.instance_id) THEN 1 ELSE 0 END AS was) x
        GROUP BY 1, 2, 3 HAVING SUM(x.now - x.was) <> 0) f
    WHERE t.job_name = f.job_name AND t.minute = f.minute AND t.instance_id = f.instance_id;

    INSERT INTO EXECUTION_STATS_HIST AS t (job_name, hour, instance_id, kind, bin, n)
    SELECT h.job_name, h.hour, h.instance_id, h.kind, CASE WHEN v < 1000 THEN v WHEN v < 10000 THEN v / 10 * 10 WHEN v < 100000 THEN v / 100 * 100 WHEN v < 1000000 THEN v / 1000 * 1000 WHEN v < 10000000 THEN v / 10000 * 10000 WHEN v < 100000000 THEN v / 100000 * 100000 WHEN v < 1000000000 THEN v / 1000000 * 1000000 WHEN v < 10000000000 THEN v / 10000000 * 10000000 WHEN v < 100000000000 THEN v / 100000000 * 100000000 WHEN v < 1000000000000 THEN v / 1000000000 * 1000000000 ELSE v / 10000000000 * 10000000000 END, SUM(h.sign) FROM (
        SELECT c.job_name, c.hour, c.instance_id, 'd' AS kind, c.d AS v, c.sign FROM ejs_stats_changes(nw, od) c WHERE c.d IS NOT NULL
        UNION ALL
        SELECT c.job_name, c.hour, c.instance_id, 'l', c.l, c.sign FROM ejs_stats_changes(nw, od) c WHERE c.l IS NOT NULL) h
    GROUP BY 1, 2, 3, 4, 5 HAVING SUM(h.sign) <> 0 ORDER BY 1, 2, 3, 4, 5
    ON CONFLICT (job_name, hour, instance_id, kind, bin) DO UPDATE SET n = t.n + excluded.n;
END
$$;

CREATE FUNCTION ejs_stats_on_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ejs_stats_apply(ARRAY(SELECT n::JOB_EXECUTION_LOG FROM new_rows n), '{}');
    RETURN NULL;
END
$$;

-- Only the updates that change what the rollup counts (not an async item's heartbeats, say).
CREATE FUNCTION ejs_stats_on_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ejs_stats_apply(
        ARRAY(SELECT n::JOB_EXECUTION_LOG FROM new_rows n JOIN old_rows o ON o.id = n.id WHERE
            (n.job_name, n.instance_id, n.start_time, n.scheduled_at, n.complete_time, n.is_success, n.execution_source,
             n.duration_ms, n.hostname, n.ip) IS DISTINCT FROM
            (o.job_name, o.instance_id, o.start_time, o.scheduled_at, o.complete_time, o.is_success, o.execution_source,
             o.duration_ms, o.hostname, o.ip)),
        ARRAY(SELECT o::JOB_EXECUTION_LOG FROM old_rows o JOIN new_rows n ON o.id = n.id WHERE
            (n.job_name, n.instance_id, n.start_time, n.scheduled_at, n.complete_time, n.is_success, n.execution_source,
             n.duration_ms, n.hostname, n.ip) IS DISTINCT FROM
            (o.job_name, o.instance_id, o.start_time, o.scheduled_at, o.complete_time, o.is_success, o.execution_source,
             o.duration_ms, o.hostname, o.ip)));
    RETURN NULL;
END
$$;

CREATE FUNCTION ejs_stats_on_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ejs_stats_apply('{}', ARRAY(SELECT o::JOB_EXECUTION_LOG FROM old_rows o));
    RETURN NULL;
END
$$;

CREATE TRIGGER job_execution_log_stats_insert AFTER INSERT ON JOB_EXECUTION_LOG
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ejs_stats_on_insert();
CREATE TRIGGER job_execution_log_stats_update AFTER UPDATE ON JOB_EXECUTION_LOG
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ejs_stats_on_update();
CREATE TRIGGER job_execution_log_stats_delete AFTER DELETE ON JOB_EXECUTION_LOG
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION ejs_stats_on_delete();
