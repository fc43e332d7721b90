-- The peer-level cells (a peer's minute, the cluster's fires a minute, a peer's histogram an hour) kept a
-- statement at a time instead of a row at a time (issue 21, docs/benchmarks.md "The peers with a PostgreSQL
-- history"). 0010's row triggers ran one PL/pgSQL call and one upsert of a peer's cell for every job cell a
-- statement changed: with the executions' statement trigger (0009) applying a batch of 190 rows, 47 ms with
-- them against 32-34 without, ~30 % of the server's rollup work. A statement's changes to the job cells are now
-- summed by peer cell first (a batch of a peer's items touches one or two), then applied as 0010 applied each
-- row's: the same cells, the same values.

DROP TRIGGER execution_stats_minute_insert ON EXECUTION_STATS_MINUTE;
DROP TRIGGER execution_stats_minute_update ON EXECUTION_STATS_MINUTE;
DROP TRIGGER execution_stats_minute_delete ON EXECUTION_STATS_MINUTE;
DROP TRIGGER execution_fires_minute_insert ON EXECUTION_FIRES_MINUTE;
DROP TRIGGER execution_fires_minute_update ON EXECUTION_FIRES_MINUTE;
DROP TRIGGER execution_fires_minute_delete ON EXECUTION_FIRES_MINUTE;
DROP TRIGGER execution_stats_hist_insert ON EXECUTION_STATS_HIST;
DROP TRIGGER execution_stats_hist_update ON EXECUTION_STATS_HIST;
DROP TRIGGER execution_stats_hist_delete ON EXECUTION_STATS_HIST;
DROP FUNCTION ejs_peer_stats_on_minute();
DROP FUNCTION ejs_peer_stats_change(EXECUTION_STATS_MINUTE, BIGINT, BIGINT, BIGINT, BIGINT);
DROP FUNCTION ejs_cluster_fires_on_minute();
DROP FUNCTION ejs_peer_hist_on_hist();

-- A statement changed job cells: nw are the cells after, od before (an insert has no od, a delete no nw; an
-- update pairs them by key, which it does not change). Each peer cell gets the sum of its job cells'
-- differences; the largest values as in 0010: the larger of the peer's and the job cells' new ones, and read
-- again from the job cells when a job cell's largest went down from a value as large as the peer's. A delete
-- counts only the cells that held something (the prune's cleanup deletes emptied ones: no peer cell's lock).
CREATE FUNCTION ejs_peer_stats_apply(nw EXECUTION_STATS_MINUTE[], od EXECUTION_STATS_MINUTE[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF cardinality(nw) + cardinality(od) = 0 THEN
        RETURN;
    END IF;
    INSERT INTO EXECUTION_PEER_STATS_MINUTE AS t (minute, instance_id, peer_fires, items, success, failure, running,
        misfire, failover, manual, dur_n, dur_sum, dur_max, late_n, late_sum, late_max, hostname, ip)
    SELECT c.minute, c.instance_id, SUM(c.s * c.peer_fires), SUM(c.s * c.items), SUM(c.s * c.success),
        SUM(c.s * c.failure), SUM(c.s * c.running), SUM(c.s * c.misfire), SUM(c.s * c.failover), SUM(c.s * c.manual),
        SUM(c.s * c.dur_n), SUM(c.s * c.dur_sum), MAX(c.dur_max) FILTER (WHERE c.s > 0),
        SUM(c.s * c.late_n), SUM(c.s * c.late_sum), MAX(c.late_max) FILTER (WHERE c.s > 0),
        COALESCE(MAX(c.hostname) FILTER (WHERE c.s > 0), ''), COALESCE(MAX(c.ip) FILTER (WHERE c.s > 0), '')
    FROM (SELECT 1 AS s, n.* FROM unnest(nw) n UNION ALL SELECT -1, o.* FROM unnest(od) o) c
    GROUP BY 1, 2 ORDER BY 1, 2
    ON CONFLICT (minute, instance_id) DO UPDATE SET peer_fires = t.peer_fires + excluded.peer_fires,
        items = t.items + excluded.items, success = t.success + excluded.success,
        failure = t.failure + excluded.failure, running = t.running + excluded.running,
        misfire = t.misfire + excluded.misfire, failover = t.failover + excluded.failover,
        manual = t.manual + excluded.manual, dur_n = t.dur_n + excluded.dur_n, dur_sum = t.dur_sum + excluded.dur_sum,
        dur_max = GREATEST(t.dur_max, excluded.dur_max), late_n = t.late_n + excluded.late_n,
        late_sum = t.late_sum + excluded.late_sum, late_max = GREATEST(t.late_max, excluded.late_max),
        hostname = GREATEST(t.hostname, excluded.hostname), ip = GREATEST(t.ip, excluded.ip);

    -- a job cell's largest value went down (or the cell went) from one as large as its peer's
    UPDATE EXECUTION_PEER_STATS_MINUTE t SET dur_max = (SELECT MAX(c.dur_max) FROM EXECUTION_STATS_MINUTE c
            WHERE c.minute = t.minute AND c.instance_id = t.instance_id)
    FROM (SELECT o.minute, o.instance_id, MAX(o.dur_max) AS od_max FROM unnest(od) o
        LEFT JOIN unnest(nw) n ON n.job_name = o.job_name AND n.minute = o.minute AND n.instance_id = o.instance_id
        WHERE o.dur_max IS NOT NULL AND (n.dur_max IS NULL OR n.dur_max < o.dur_max) GROUP BY 1, 2) r
    WHERE t.minute = r.minute AND t.instance_id = r.instance_id AND r.od_max >= t.dur_max;
    UPDATE EXECUTION_PEER_STATS_MINUTE t SET late_max = (SELECT MAX(c.late_max) FROM EXECUTION_STATS_MINUTE c
            WHERE c.minute = t.minute AND c.instance_id = t.instance_id)
    FROM (SELECT o.minute, o.instance_id, MAX(o.late_max) AS od_max FROM unnest(od) o
        LEFT JOIN unnest(nw) n ON n.job_name = o.job_name AND n.minute = o.minute AND n.instance_id = o.instance_id
        WHERE o.late_max IS NOT NULL AND (n.late_max IS NULL OR n.late_max < o.late_max) GROUP BY 1, 2) r
    WHERE t.minute = r.minute AND t.instance_id = r.instance_id AND r.od_max >= t.late_max;
END
$$;

CREATE FUNCTION ejs_peer_stats_on_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ejs_peer_stats_apply(ARRAY(SELECT n::EXECUTION_STATS_MINUTE FROM new_rows n), '{}');
    RETURN NULL;
END
$$;

CREATE FUNCTION ejs_peer_stats_on_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ejs_peer_stats_apply(ARRAY(SELECT n::EXECUTION_STATS_MINUTE FROM new_rows n),
        ARRAY(SELECT o::EXECUTION_STATS_MINUTE FROM old_rows o));
    RETURN NULL;
END
$$;

CREATE FUNCTION ejs_peer_stats_on_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ejs_peer_stats_apply('{}', ARRAY(SELECT o::EXECUTION_STATS_MINUTE FROM old_rows o
        WHERE o.items <> 0 OR o.peer_fires <> 0 OR o.dur_n <> 0 OR o.late_n <> 0));
    RETURN NULL;
END
$$;

CREATE TRIGGER execution_stats_minute_insert AFTER INSERT ON EXECUTION_STATS_MINUTE
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ejs_peer_stats_on_insert();
CREATE TRIGGER execution_stats_minute_update AFTER UPDATE ON EXECUTION_STATS_MINUTE
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ejs_peer_stats_on_update();
CREATE TRIGGER execution_stats_minute_delete AFTER DELETE ON EXECUTION_STATS_MINUTE
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION ejs_peer_stats_on_delete();

-- The cluster's fires a minute: an insert adds (creating the minute), an update or a delete changes the
-- minute that is there, by the sum of the statement's differences.
CREATE FUNCTION ejs_cluster_fires_on_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO EXECUTION_CLUSTER_FIRES_MINUTE AS t (minute, fires)
    SELECT n.minute, SUM(n.fires) FROM new_rows n GROUP BY 1 ORDER BY 1
    ON CONFLICT (minute) DO UPDATE SET fires = t.fires + excluded.fires;
    RETURN NULL;
END
$$;

CREATE FUNCTION ejs_cluster_fires_on_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        UPDATE EXECUTION_CLUSTER_FIRES_MINUTE t SET fires = t.fires + d.delta FROM (
            SELECT c.minute, SUM(c.fires) AS delta FROM (SELECT n.minute, n.fires FROM new_rows n
                UNION ALL SELECT o.minute, -o.fires FROM old_rows o) c GROUP BY 1 HAVING SUM(c.fires) <> 0) d
        WHERE t.minute = d.minute;
    ELSE
        UPDATE EXECUTION_CLUSTER_FIRES_MINUTE t SET fires = t.fires - d.fires FROM (
            SELECT o.minute, SUM(o.fires) AS fires FROM old_rows o GROUP BY 1 HAVING SUM(o.fires) <> 0) d
        WHERE t.minute = d.minute;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER execution_fires_minute_insert AFTER INSERT ON EXECUTION_FIRES_MINUTE
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ejs_cluster_fires_on_insert();
CREATE TRIGGER execution_fires_minute_update AFTER UPDATE ON EXECUTION_FIRES_MINUTE
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ejs_cluster_fires_on_change();
CREATE TRIGGER execution_fires_minute_delete AFTER DELETE ON EXECUTION_FIRES_MINUTE
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION ejs_cluster_fires_on_change();

-- A peer's histogram an hour, the same way.
CREATE FUNCTION ejs_peer_hist_on_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO EXECUTION_PEER_STATS_HIST AS t (hour, instance_id, kind, bin, n)
    SELECT h.hour, h.instance_id, h.kind, h.bin, SUM(h.n) FROM new_rows h GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
    ON CONFLICT (hour, instance_id, kind, bin) DO UPDATE SET n = t.n + excluded.n;
    RETURN NULL;
END
$$;

CREATE FUNCTION ejs_peer_hist_on_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        UPDATE EXECUTION_PEER_STATS_HIST t SET n = t.n + d.delta FROM (
            SELECT c.hour, c.instance_id, c.kind, c.bin, SUM(c.n) AS delta FROM (
                SELECT h.hour, h.instance_id, h.kind, h.bin, h.n FROM new_rows h
                UNION ALL SELECT o.hour, o.instance_id, o.kind, o.bin, -o.n FROM old_rows o) c
            GROUP BY 1, 2, 3, 4 HAVING SUM(c.n) <> 0) d
        WHERE t.hour = d.hour AND t.instance_id = d.instance_id AND t.kind = d.kind AND t.bin = d.bin;
    ELSE
        UPDATE EXECUTION_PEER_STATS_HIST t SET n = t.n - d.n FROM (
            SELECT o.hour, o.instance_id, o.kind, o.bin, SUM(o.n) AS n FROM old_rows o
            GROUP BY 1, 2, 3, 4 HAVING SUM(o.n) <> 0) d
        WHERE t.hour = d.hour AND t.instance_id = d.instance_id AND t.kind = d.kind AND t.bin = d.bin;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER execution_stats_hist_insert AFTER INSERT ON EXECUTION_STATS_HIST
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ejs_peer_hist_on_insert();
CREATE TRIGGER execution_stats_hist_update AFTER UPDATE ON EXECUTION_STATS_HIST
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ejs_peer_hist_on_change();
CREATE TRIGGER execution_stats_hist_delete AFTER DELETE ON EXECUTION_STATS_HIST
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION ejs_peer_hist_on_change();
