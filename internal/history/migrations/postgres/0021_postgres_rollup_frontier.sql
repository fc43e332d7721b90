-- The stats' rollup counted a minute at a time, behind a frontier, as SQLite's since its 0017 (issue 21,
-- docs/benchmarks.md "PostgreSQL's rollup a minute at a time"). 0009's statement trigger counted every batch of
-- rows as it was written: ~5 upserts of job cells an item (its minute cell, its fire's, two bins of its hour),
-- each a conflict and an update of a cell that the item's minute had written already, ~85 % of the server's CPU
-- for a peer's item. The peers now count a minute's rows once the minute is over, each cell once, in its key's
-- order (ejs_rollup_count, called by the peers' writers with the minute's chunks: history/postgres_frontier.go),
-- and keep here how far they have counted (rollup.Frontier): every row of a minute before `minute`, and the
-- rows of `minute` whose job's name is at most `job` ('' none), names compared byte by byte (COLLATE "C", Go's
-- order). A row behind the frontier changes its cells as it is written, as every row did before; a row ahead
-- of it changes nothing until it is counted; the stats read such rows beside the cells.
--
-- One advisory lock (0009's) orders the frontier and the writers: a statement writing rows takes it before it
-- reads the frontier and holds it to its transaction's end, and an advance takes it before it reads the
-- frontier and the rows. So a row is counted exactly once: either its writer saw the frontier behind it
-- (counted now), or the frontier's advance that passes it reads it committed (its writer's lock released).
-- The writers' statements must read committed (PostgreSQL's default), not a snapshot older than the lock.
CREATE TABLE EXECUTION_ROLLUP_FRONTIER (
    id     INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    minute BIGINT  NOT NULL,
    job    TEXT    COLLATE "C" NOT NULL
);

-- Every row already stored is counted: the frontier starts after the newest row and after the next minute (a
-- writer of an older release may be waiting on the lock with an item of this minute: its trigger counts it).
SELECT pg_advisory_xact_lock(7307779168248034672); -- 'ejrollup'
INSERT INTO EXECUTION_ROLLUP_FRONTIER (id, minute, job)
SELECT 1, GREATEST(COALESCE(MAX(CAST(EXTRACT(EPOCH FROM start_time) * 1000000 AS BIGINT)) / 60000000, 0),
    CAST(EXTRACT(EPOCH FROM clock_timestamp()) AS BIGINT) / 60) + 2, '' FROM JOB_EXECUTION_LOG;

-- The rows of rows the frontier has counted (rollup.Frontier.Counted). Its caller holds the lock.
CREATE FUNCTION ejs_stats_counted(rows JOB_EXECUTION_LOG[]) RETURNS JOB_EXECUTION_LOG[] LANGUAGE sql VOLATILE AS $$
    SELECT ARRAY(SELECT r::JOB_EXECUTION_LOG FROM unnest(rows) r, EXECUTION_ROLLUP_FRONTIER f,
            LATERAL (SELECT CAST(EXTRACT(EPOCH FROM r.start_time) * 1000000 AS BIGINT) / 60000000 AS m) u
        WHERE f.id = 1 AND (u.m < f.minute OR u.m = f.minute AND f.job <> '' AND r.job_name COLLATE "C" <= f.job))
$$;

-- 0009's triggers, with the lock taken first and the rows the frontier has not counted left out.
CREATE OR REPLACE FUNCTION ejs_stats_on_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM new_rows) THEN
        RETURN NULL;
    END IF;
    PERFORM pg_advisory_xact_lock(7307779168248034672);
    PERFORM ejs_stats_apply(ejs_stats_counted(ARRAY(SELECT n::JOB_EXECUTION_LOG FROM new_rows n)), '{}');
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION ejs_stats_on_update() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    nw JOB_EXECUTION_LOG[];
    od JOB_EXECUTION_LOG[];
BEGIN
    nw := ARRAY(SELECT n::JOB_EXECUTION_LOG FROM new_rows n JOIN old_rows o ON o.id = n.id WHERE
            (n.job_name, n.instance_id, n.start_time, n.scheduled_at, n.complete_time, n.is_success, n.execution_source,
             n.duration_ms, n.hostname, n.ip) IS DISTINCT FROM
            (o.job_name, o.instance_id, o.start_time, o.scheduled_at, o.complete_time, o.is_success, o.execution_source,
             o.duration_ms, o.hostname, o.ip));
    IF cardinality(nw) = 0 THEN
        RETURN NULL;
    END IF;
    od := ARRAY(SELECT o::JOB_EXECUTION_LOG FROM old_rows o JOIN unnest(nw) n ON o.id = n.id);
    PERFORM pg_advisory_xact_lock(7307779168248034672);
    PERFORM ejs_stats_apply(ejs_stats_counted(nw), ejs_stats_counted(od));
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION ejs_stats_on_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM old_rows) THEN
        RETURN NULL;
    END IF;
    PERFORM pg_advisory_xact_lock(7307779168248034672);
    PERFORM ejs_stats_apply('{}', ejs_stats_counted(ARRAY(SELECT o::JOB_EXECUTION_LOG FROM old_rows o)));
    RETURN NULL;
END
$$;

-- Counts the rows of minute m of the jobs after `after` up to `last` (the frontier's next chunk) into the job
-- cells, each cell written once in its key's order, and returns how many rows it counted. The peer-level
-- cells follow from the job cells (0020). The caller holds the lock and moves the frontier.
CREATE FUNCTION ejs_rollup_count(m BIGINT, after TEXT, last TEXT) RETURNS BIGINT LANGUAGE plpgsql AS $$
DECLARE
    counted BIGINT;
BEGIN
    WITH r AS MATERIALIZED (
        SELECT job_name, instance_id, scheduled_at, complete_time, is_success, execution_source, hostname, ip,
            CASE WHEN complete_time IS NOT NULL THEN duration_ms END AS d,
            CASE WHEN scheduled_at IS NOT NULL THEN (CAST(EXTRACT(EPOCH FROM start_time) * 1000000 AS BIGINT)
                - CAST(EXTRACT(EPOCH FROM scheduled_at) * 1000000 AS BIGINT)) / 1000 END AS l
        FROM JOB_EXECUTION_LOG
        WHERE start_time >= to_timestamp(m * 60) AND start_time < to_timestamp((m + 1) * 60)
            AND job_name COLLATE "C" > after AND job_name COLLATE "C" <= last),
    cells AS (
        INSERT INTO EXECUTION_STATS_MINUTE AS t (job_name, minute, instance_id, peer_fires, items, success, failure,
            running, misfire, failover, manual, dur_n, dur_sum, dur_max, late_n, late_sum, late_max, hostname, ip)
        SELECT job_name, m, instance_id, COUNT(DISTINCT scheduled_at), COUNT(*),
            COUNT(*) FILTER (WHERE complete_time IS NOT NULL AND is_success),
            COUNT(*) FILTER (WHERE complete_time IS NOT NULL AND NOT is_success),
            COUNT(*) FILTER (WHERE complete_time IS NULL), COUNT(*) FILTER (WHERE execution_source = 'MISFIRE'),
            COUNT(*) FILTER (WHERE execution_source = 'FAILOVER'), COUNT(*) FILTER (WHERE execution_source = 'MANUAL'),
            COUNT(d), COALESCE(SUM(d), 0), MAX(d), COUNT(l), COALESCE(SUM(l), 0), MAX(l), MAX(hostname), MAX(ip)
        FROM r GROUP BY job_name, instance_id ORDER BY job_name, instance_id
        ON CONFLICT (job_name, minute, instance_id) DO UPDATE SET peer_fires = t.peer_fires + excluded.peer_fires,
            items = t.items + excluded.items, success = t.success + excluded.success,
            failure = t.failure + excluded.failure, running = t.running + excluded.running,
            misfire = t.misfire + excluded.misfire, failover = t.failover + excluded.failover,
            manual = t.manual + excluded.manual, dur_n = t.dur_n + excluded.dur_n,
            dur_sum = t.dur_sum + excluded.dur_sum, dur_max = GREATEST(t.dur_max, excluded.dur_max),
            late_n = t.late_n + excluded.late_n, late_sum = t.late_sum + excluded.late_sum,
            late_max = GREATEST(t.late_max, excluded.late_max),
            hostname = GREATEST(t.hostname, excluded.hostname), ip = GREATEST(t.ip, excluded.ip)),
    fires AS (
        INSERT INTO EXECUTION_FIRES_MINUTE AS t (job_name, minute, fires)
        SELECT job_name, m, COUNT(DISTINCT scheduled_at) FROM r GROUP BY job_name ORDER BY job_name
        ON CONFLICT (job_name, minute) DO UPDATE SET fires = t.fires + excluded.fires),
    hist AS (
        INSERT INTO EXECUTION_STATS_HIST AS t (job_name, hour, instance_id, kind, bin, n)
        SELECT h.job_name, m / 60, h.instance_id, h.kind, CASE WHEN v < 1000 THEN v WHEN v < 10000 THEN v / 10 * 10 WHEN v < 100000 THEN v / 100 * 100 WHEN v < 1000000 THEN v / 1000 * 1000 WHEN v < 10000000 THEN v / 10000 * 10000 WHEN v < 100000000 THEN v / 100000 * 100000 WHEN v < 1000000000 THEN v / 1000000 * 1000000 WHEN v < 10000000000 THEN v / 10000000 * 10000000 WHEN v < 100000000000 THEN v / 100000000 * 100000000 WHEN v < 1000000000000 THEN v / 1000000000 * 1000000000 ELSE v / 10000000000 * 10000000000 END, COUNT(*) FROM (
            SELECT job_name, instance_id, 'd' AS kind, d AS v FROM r WHERE d IS NOT NULL
            UNION ALL
            SELECT job_name, instance_id, 'l', l FROM r WHERE l IS NOT NULL) h
        GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5
        ON CONFLICT (job_name, hour, instance_id, kind, bin) DO UPDATE SET n = t.n + excluded.n)
    SELECT COUNT(*) INTO counted FROM r;
    RETURN counted;
END
$$;
