-- The stats' rollup, a level up (issue 25, docs/benchmarks.md): per peer and minute, and per peer and hour for
-- the histograms, without the job, so that the cluster stats of a day read about 1,440 cells per peer and a
-- day's histogram bins per peer, however many jobs ran. Row triggers on migration 0009's tables keep them in
-- the same transaction (a change of a job's cell adds its difference to the peer's cell), under 0009's
-- advisory lock when the executions' triggers write, whichever release writes the rows. They answer the
-- cluster stats that no token's job scope narrows; a scoped query reads the job tables. (SQLite's 0010 also
-- indexes the cells' largest values for its per-row re-reads; PostgreSQL re-reads once per statement and cell.)

-- Per peer and minute of start_time: the sums of the peer's cells in EXECUTION_STATS_MINUTE (peer_fires is
-- the sum of its jobs' distinct fires), the largest of their largest values.
CREATE TABLE EXECUTION_PEER_STATS_MINUTE (
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
    PRIMARY KEY (minute, instance_id)
);

-- Per minute: the distinct fires of every job (the sum of EXECUTION_FIRES_MINUTE's jobs).
CREATE TABLE EXECUTION_CLUSTER_FIRES_MINUTE (
    minute BIGINT NOT NULL PRIMARY KEY,
    fires  BIGINT NOT NULL DEFAULT 0
);

-- Per hour and peer: EXECUTION_STATS_HIST's bins added up over the jobs.
CREATE TABLE EXECUTION_PEER_STATS_HIST (
    hour        BIGINT NOT NULL,
    instance_id TEXT   NOT NULL,
    kind        TEXT   NOT NULL,
    bin         BIGINT NOT NULL,
    n           BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (hour, instance_id, kind, bin)
);

-- The peers' re-reads of their largest values, off the end of the job cells of a minute and peer (a scan of
-- them would cost each pruned row of a minute of ten thousand jobs the other cells).
CREATE INDEX execution_stats_minute_peer_duration ON EXECUTION_STATS_MINUTE (minute, instance_id, dur_max);
CREATE INDEX execution_stats_minute_peer_lateness ON EXECUTION_STATS_MINUTE (minute, instance_id, late_max);

-- The cells already there.
INSERT INTO EXECUTION_PEER_STATS_MINUTE
SELECT minute, instance_id, SUM(peer_fires), SUM(items), SUM(success), SUM(failure), SUM(running), SUM(misfire),
    SUM(failover), SUM(manual), SUM(dur_n), SUM(dur_sum), MAX(dur_max), SUM(late_n), SUM(late_sum), MAX(late_max),
    MAX(hostname), MAX(ip)
FROM EXECUTION_STATS_MINUTE GROUP BY 1, 2;
INSERT INTO EXECUTION_CLUSTER_FIRES_MINUTE SELECT minute, SUM(fires) FROM EXECUTION_FIRES_MINUTE GROUP BY 1;
INSERT INTO EXECUTION_PEER_STATS_HIST SELECT hour, instance_id, kind, bin, SUM(n) FROM EXECUTION_STATS_HIST GROUP BY 1, 2, 3, 4;

-- A job's cell changed: add the difference (d: the cell after less the cell before; zeros for a missing
-- cell) to its peer's cell. nw_dur_max and od_dur_max are the job cell's largest values after and before: when
-- the largest went down and was the peer's, the peer's is re-read from its cells.
CREATE FUNCTION ejs_peer_stats_change(d EXECUTION_STATS_MINUTE, nw_dur_max BIGINT, nw_late_max BIGINT,
    od_dur_max BIGINT, od_late_max BIGINT) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO EXECUTION_PEER_STATS_MINUTE AS t (minute, instance_id, peer_fires, items, success, failure, running,
        misfire, failover, manual, dur_n, dur_sum, dur_max, late_n, late_sum, late_max, hostname, ip)
    VALUES (d.minute, d.instance_id, d.peer_fires, d.items, d.success, d.failure, d.running, d.misfire, d.failover,
        d.manual, d.dur_n, d.dur_sum, nw_dur_max, d.late_n, d.late_sum, nw_late_max, d.hostname, d.ip)
    ON CONFLICT (minute, instance_id) DO UPDATE SET peer_fires = t.peer_fires + excluded.peer_fires,
        items = t.items + excluded.items, success = t.success + excluded.success,
        failure = t.failure + excluded.failure, running = t.running + excluded.running,
        misfire = t.misfire + excluded.misfire, failover = t.failover + excluded.failover,
        manual = t.manual + excluded.manual, dur_n = t.dur_n + excluded.dur_n, dur_sum = t.dur_sum + excluded.dur_sum,
        dur_max = GREATEST(t.dur_max, excluded.dur_max), late_n = t.late_n + excluded.late_n,
        late_sum = t.late_sum + excluded.late_sum, late_max = GREATEST(t.late_max, excluded.late_max),
        hostname = GREATEST(t.hostname, excluded.hostname), ip = GREATEST(t.ip, excluded.ip);
    IF od_dur_max IS NOT NULL AND (nw_dur_max IS NULL OR nw_dur_max < od_dur_max) THEN
        UPDATE EXECUTION_PEER_STATS_MINUTE t SET dur_max = (SELECT MAX(c.dur_max) FROM EXECUTION_STATS_MINUTE c
                WHERE c.minute = d.minute AND c.instance_id = d.instance_id)
            WHERE t.minute = d.minute AND t.instance_id = d.instance_id AND od_dur_max >= t.dur_max;
    END IF;
    IF od_late_max IS NOT NULL AND (nw_late_max IS NULL OR nw_late_max < od_late_max) THEN
        UPDATE EXECUTION_PEER_STATS_MINUTE t SET late_max = (SELECT MAX(c.late_max) FROM EXECUTION_STATS_MINUTE c
                WHERE c.minute = d.minute AND c.instance_id = d.instance_id)
            WHERE t.minute = d.minute AND t.instance_id = d.instance_id AND od_late_max >= t.late_max;
    END IF;
END
$$;

CREATE FUNCTION ejs_peer_stats_on_minute() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    d EXECUTION_STATS_MINUTE;
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM ejs_peer_stats_change(NEW, NEW.dur_max, NEW.late_max, NULL, NULL);
    ELSIF TG_OP = 'UPDATE' THEN
        d := NEW;
        d.peer_fires := NEW.peer_fires - OLD.peer_fires;
        d.items := NEW.items - OLD.items;
        d.success := NEW.success - OLD.success;
        d.failure := NEW.failure - OLD.failure;
        d.running := NEW.running - OLD.running;
        d.misfire := NEW.misfire - OLD.misfire;
        d.failover := NEW.failover - OLD.failover;
        d.manual := NEW.manual - OLD.manual;
        d.dur_n := NEW.dur_n - OLD.dur_n;
        d.dur_sum := NEW.dur_sum - OLD.dur_sum;
        d.late_n := NEW.late_n - OLD.late_n;
        d.late_sum := NEW.late_sum - OLD.late_sum;
        PERFORM ejs_peer_stats_change(d, NEW.dur_max, NEW.late_max, OLD.dur_max, OLD.late_max);
    ELSE
        d := OLD;
        d.peer_fires := -OLD.peer_fires;
        d.items := -OLD.items;
        d.success := -OLD.success;
        d.failure := -OLD.failure;
        d.running := -OLD.running;
        d.misfire := -OLD.misfire;
        d.failover := -OLD.failover;
        d.manual := -OLD.manual;
        d.dur_n := -OLD.dur_n;
        d.dur_sum := -OLD.dur_sum;
        d.late_n := -OLD.late_n;
        d.late_sum := -OLD.late_sum;
        d.hostname := '';
        d.ip := '';
        PERFORM ejs_peer_stats_change(d, NULL, NULL, OLD.dur_max, OLD.late_max);
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION ejs_cluster_fires_on_minute() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO EXECUTION_CLUSTER_FIRES_MINUTE AS t (minute, fires) VALUES (NEW.minute, NEW.fires)
        ON CONFLICT (minute) DO UPDATE SET fires = t.fires + excluded.fires;
    ELSIF TG_OP = 'UPDATE' THEN
        UPDATE EXECUTION_CLUSTER_FIRES_MINUTE SET fires = fires + NEW.fires - OLD.fires WHERE minute = NEW.minute;
    ELSE
        UPDATE EXECUTION_CLUSTER_FIRES_MINUTE SET fires = fires - OLD.fires WHERE minute = OLD.minute;
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION ejs_peer_hist_on_hist() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO EXECUTION_PEER_STATS_HIST AS t (hour, instance_id, kind, bin, n)
        VALUES (NEW.hour, NEW.instance_id, NEW.kind, NEW.bin, NEW.n)
        ON CONFLICT (hour, instance_id, kind, bin) DO UPDATE SET n = t.n + excluded.n;
    ELSIF TG_OP = 'UPDATE' THEN
        UPDATE EXECUTION_PEER_STATS_HIST SET n = n + NEW.n - OLD.n
        WHERE hour = NEW.hour AND instance_id = NEW.instance_id AND kind = NEW.kind AND bin = NEW.bin;
    ELSE
        UPDATE EXECUTION_PEER_STATS_HIST SET n = n - OLD.n
        WHERE hour = OLD.hour AND instance_id = OLD.instance_id AND kind = OLD.kind AND bin = OLD.bin;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER execution_stats_minute_insert AFTER INSERT ON EXECUTION_STATS_MINUTE
    FOR EACH ROW EXECUTE FUNCTION ejs_peer_stats_on_minute();
CREATE TRIGGER execution_stats_minute_update AFTER UPDATE ON EXECUTION_STATS_MINUTE
    FOR EACH ROW EXECUTE FUNCTION ejs_peer_stats_on_minute();
-- The prune's cleanup deletes emptied cells (all zeros): nothing to subtract, and the peer's cell is left
-- alone (its own cleanup deletes it), so the cleanup takes no peer cell's lock.
CREATE TRIGGER execution_stats_minute_delete AFTER DELETE ON EXECUTION_STATS_MINUTE
    FOR EACH ROW WHEN (OLD.items <> 0 OR OLD.peer_fires <> 0 OR OLD.dur_n <> 0 OR OLD.late_n <> 0)
    EXECUTE FUNCTION ejs_peer_stats_on_minute();

CREATE TRIGGER execution_fires_minute_insert AFTER INSERT ON EXECUTION_FIRES_MINUTE
    FOR EACH ROW EXECUTE FUNCTION ejs_cluster_fires_on_minute();
CREATE TRIGGER execution_fires_minute_update AFTER UPDATE ON EXECUTION_FIRES_MINUTE
    FOR EACH ROW WHEN (OLD.fires IS DISTINCT FROM NEW.fires) EXECUTE FUNCTION ejs_cluster_fires_on_minute();
CREATE TRIGGER execution_fires_minute_delete AFTER DELETE ON EXECUTION_FIRES_MINUTE
    FOR EACH ROW WHEN (OLD.fires <> 0) EXECUTE FUNCTION ejs_cluster_fires_on_minute();

CREATE TRIGGER execution_stats_hist_insert AFTER INSERT ON EXECUTION_STATS_HIST
    FOR EACH ROW EXECUTE FUNCTION ejs_peer_hist_on_hist();
CREATE TRIGGER execution_stats_hist_update AFTER UPDATE ON EXECUTION_STATS_HIST
    FOR EACH ROW WHEN (OLD.n IS DISTINCT FROM NEW.n) EXECUTE FUNCTION ejs_peer_hist_on_hist();
CREATE TRIGGER execution_stats_hist_delete AFTER DELETE ON EXECUTION_STATS_HIST
    FOR EACH ROW WHEN (OLD.n <> 0) EXECUTE FUNCTION ejs_peer_hist_on_hist();
