-- The frontier's advance a step at a time, each step one statement that takes the rollup's lock, checks the
-- frontier it was planned from, counts and moves it (issue 21, docs/benchmarks.md "the rollup's lock, held
-- only inside the server"). Until now a peer advanced the frontier in its write's transaction, after the
-- executions, whose triggers take the lock: the lock was held across that transaction's next 4-6 round trips
-- (the frontier read twice, the minute's plan, the count, the frontier's write, the commit). At 100,000 jobs
-- on a host at 100 % a peer answered each one late, and the other peers' writes queued for the lock 1-4.6 s.
-- A peer now writes its executions in one round trip (history/postgres_batch.go) and advances the frontier
-- after that commit, by calling this function: the lock is held only while the server works.
--
-- One peer steps at a time: a step that finds another peer's step under way (a second advisory lock, tried, not
-- waited for) returns at once with counted -1, and its peer leaves the advance to that one. Every peer tries a
-- step after each of its writes while a minute is due; without the turn two of three waited for the rollup's
-- lock behind the third's step, their writers held, only to find the frontier moved.
--
-- ejs_rollup_step(fm, fj, last, due) expects the frontier at (fm, fj), a minute before due. With last, it
-- counts the rows of minute fm of the jobs after fj up to last (ejs_rollup_count) and moves the frontier to
-- (fm, last). Without last (NULL), minute fm has no row after fj as the caller planned: the frontier moves to
-- the first minute after fm that has a row, or to due if none is before it. It returns the frontier as it
-- then is, and how many rows it counted. A frontier found elsewhere (another peer moved it since the caller
-- read it), or a row after fj in minute fm when the caller planned none (written since), moves nothing: the
-- caller reads the frontier it gets back, and plans again.
CREATE FUNCTION ejs_rollup_step(fm BIGINT, fj TEXT, last TEXT, due BIGINT,
    OUT at_minute BIGINT, OUT at_job TEXT, OUT counted BIGINT) LANGUAGE plpgsql AS $$
DECLARE
    next BIGINT;
BEGIN
    IF NOT pg_try_advisory_xact_lock(7307779168248034673) THEN -- the steps' turn ('ejrollup' + 1)
        at_minute := fm;
        at_job := fj;
        counted := -1;
        RETURN;
    END IF;
    PERFORM pg_advisory_xact_lock(7307779168248034672); -- 'ejrollup', 0009's
    SELECT f.minute, f.job INTO at_minute, at_job FROM EXECUTION_ROLLUP_FRONTIER f WHERE f.id = 1;
    counted := 0;
    IF at_minute <> fm OR at_job <> fj OR fm >= due THEN
        RETURN;
    END IF;
    IF last IS NOT NULL THEN
        counted := ejs_rollup_count(fm, fj, last);
        at_job := last;
    ELSE
        IF EXISTS (SELECT 1 FROM JOB_EXECUTION_LOG
                WHERE start_time >= to_timestamp(fm * 60) AND start_time < to_timestamp((fm + 1) * 60)
                AND job_name COLLATE "C" > fj) THEN
            RETURN;
        END IF;
        SELECT CAST(EXTRACT(EPOCH FROM MIN(start_time)) * 1000000 AS BIGINT) / 60000000 INTO next
            FROM JOB_EXECUTION_LOG WHERE start_time >= to_timestamp((fm + 1) * 60);
        at_minute := LEAST(COALESCE(next, due), due);
        at_job := '';
    END IF;
    UPDATE EXECUTION_ROLLUP_FRONTIER SET minute = at_minute, job = at_job WHERE id = 1;
END
$$;
