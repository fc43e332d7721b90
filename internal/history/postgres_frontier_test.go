package history

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/history/rollup"
)

// pgJobCellsFromRows are PostgreSQL's job-level rollup tables beside their computation from the rows the
// frontier has counted (a table expression `counted`), the empty cells left out (a prune's emptied cells wait
// for pruneRollup; hostname and ip keep the largest ever seen, also of rows gone).
var pgJobCellsFromRows = []struct{ name, stored, fromRows string }{
	{"EXECUTION_STATS_MINUTE",
		`SELECT job_name, minute, instance_id, peer_fires, items, success, failure, running, misfire, failover, manual,
			dur_n, dur_sum, dur_max, late_n, late_sum, late_max FROM EXECUTION_STATS_MINUTE
			WHERE (items, peer_fires, success, failure, running, misfire, failover, manual, dur_n, dur_sum, late_n, late_sum)
			<> (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)`,
		`SELECT job_name, m, instance_id, COUNT(DISTINCT scheduled_at), COUNT(*),
			COUNT(*) FILTER (WHERE complete_time IS NOT NULL AND is_success),
			COUNT(*) FILTER (WHERE complete_time IS NOT NULL AND NOT is_success), COUNT(*) FILTER (WHERE complete_time IS NULL),
			COUNT(*) FILTER (WHERE execution_source = 'MISFIRE'), COUNT(*) FILTER (WHERE execution_source = 'FAILOVER'),
			COUNT(*) FILTER (WHERE execution_source = 'MANUAL'), COUNT(d), COALESCE(SUM(d), 0)::BIGINT, MAX(d),
			COUNT(l), COALESCE(SUM(l), 0)::BIGINT, MAX(l)
		FROM counted GROUP BY 1, 2, 3`},
	{"EXECUTION_FIRES_MINUTE", `SELECT job_name, minute, fires FROM EXECUTION_FIRES_MINUTE WHERE fires <> 0`,
		`SELECT job_name, m, COUNT(DISTINCT scheduled_at) FROM counted GROUP BY 1, 2 HAVING COUNT(DISTINCT scheduled_at) <> 0`},
	{"EXECUTION_STATS_HIST", `SELECT job_name, hour, instance_id, kind, bin, n FROM EXECUTION_STATS_HIST WHERE n <> 0`,
		`SELECT job_name, m / 60, instance_id, kind, ` + binOf("v") + `, COUNT(*) FROM (
			SELECT job_name, m, instance_id, 'd' AS kind, d AS v FROM counted WHERE d IS NOT NULL
			UNION ALL SELECT job_name, m, instance_id, 'l', l FROM counted WHERE l IS NOT NULL) h GROUP BY 1, 2, 3, 4, 5`},
}

// pgCounted is the rows PostgreSQL's frontier has counted, with their minute, duration and lateness.
const pgCounted = `WITH counted AS (SELECT e.*, u.us / 60000000 AS m,
		CASE WHEN e.complete_time IS NOT NULL THEN e.duration_ms END AS d,
		CASE WHEN e.scheduled_at IS NOT NULL THEN (u.us - CAST(EXTRACT(EPOCH FROM e.scheduled_at) * 1000000 AS BIGINT)) / 1000 END AS l
	FROM JOB_EXECUTION_LOG e, EXECUTION_ROLLUP_FRONTIER f,
		LATERAL (SELECT CAST(EXTRACT(EPOCH FROM e.start_time) * 1000000 AS BIGINT) AS us) u
	WHERE f.id = 1 AND (u.us / 60000000 < f.minute OR u.us / 60000000 = f.minute AND f.job <> ''
		AND e.job_name COLLATE "C" <= f.job)) `

// checkPGRollupTables fails t unless PostgreSQL's job-level rollup tables equal their computation from the
// rows its frontier has counted (the peer level follows them: TestPostgresPeerCellsAreTheSumOfTheirJobCells).
func checkPGRollupTables(t *testing.T, s *postgresStore, stage string) {
	t.Helper()
	for _, c := range pgJobCellsFromRows {
		pgSameRows(t, s, pgCounted, stage, c.name, c.stored, c.fromRows, "stored, not from the rows", "from the rows, not stored")
	}
}

// TestPostgresFrontierRacesTheWriters writes a history from three peers' stores at once, each write moving the
// frontier over a few rows of the minutes it writes into (the system's clock: every minute of t0's history is
// over), end records replacing start records on both sides of it, and checks that the cells count every row
// the frontier has passed exactly once: as its writer wrote it (behind the frontier) or as the advance passed
// it (ahead), however the writers' and the advances' transactions interleave. Then the rest is counted and
// the stats answer as the rows.
func TestPostgresFrontierRacesTheWriters(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(21, 12))
	starts, later := randomHistory(r, 1500)
	slices.SortStableFunc(starts, func(a, b ejserver.Execution) int { return a.StartedAt.Compare(b.StartedAt) })
	dsn := newDSN(t, "postgres")
	first := openDSN(t, dsn).(*postgresStore)
	pgFrontierAfterRows(t, first) // no rows: minute 0, the history all ahead of it
	stores := []*postgresStore{first, openDSN(t, dsn).(*postgresStore), openDSN(t, dsn).(*postgresStore)}
	for _, st := range stores {
		st.advanceRows = 10
	}
	// each peer writes its own third of the records in time order, starts then ends, 40 at a time: the
	// frontier, moved 10 rows a write, falls behind the writes
	var wg sync.WaitGroup
	for i, st := range stores {
		wg.Go(func() {
			var mine []ejserver.Execution
			for _, recs := range [][]ejserver.Execution{starts, later} {
				for j := i; j < len(recs); j += len(stores) {
					mine = append(mine, recs[j])
				}
			}
			for j := 0; j < len(mine); j += 40 {
				if err := st.WriteExecutions(context.Background(), mine[j:min(j+40, len(mine))]); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	f := frontierOf(t, first)
	if f.Minute == 0 {
		t.Fatalf("the writes did not move the frontier: %+v", f)
	}
	t.Logf("the writes counted up to minute %d (t0 + %d min), job %q", f.Minute, f.Minute-t0.Unix()/60, f.Job)
	checkPGRollupTables(t, first, fmt.Sprintf("written, counted up to minute %d, job %q", f.Minute, f.Job))
	advanceRollupBy(t, first, 1<<20)
	checkPGRollupTables(t, first, "all counted")
	run, d := rawStats(t, first)
	ctx := testCtx(t)
	q := StatsQuery{From: t0.Add(-10 * time.Minute), To: t0.Add(4 * time.Hour), Bucket: time.Hour}
	got, err := first.ClusterStats(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	want, err := clusterStats(ctx, run, d, q, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := diff(want, got); d != "" {
		t.Fatalf("cluster stats, rollup against rows:\n%s", d)
	}
}

// TestPostgresRollupBehind reads how long the oldest row PostgreSQL's rollup has not counted has been due: none,
// a row of a minute over for 7.5 minutes (its end and 30 s), and none once the frontier passed it.
func TestPostgresRollupBehind(t *testing.T) {
	t.Parallel()
	s := openStore(t, "postgres").(*postgresStore)
	pgFrontierAfterRows(t, s) // no rows: minute 0
	noAdvance(s)
	s.clock = clock.NewFake(t0.Add(10 * time.Minute))
	ctx := testCtx(t)
	behind := func(want time.Duration) {
		t.Helper()
		if got, err := s.RollupBehind(ctx); err != nil || got != want {
			t.Fatalf("behind %v (%v), want %v", got, err, want)
		}
	}
	behind(0)
	mustWrite(t, s, newExec("pay", 0, t0.Add(time.Minute+5*time.Second)))
	behind(7*time.Minute + 30*time.Second)
	advanceRollupBy(t, s, 100)
	behind(0)
	if f := frontierOf(t, s); f.Minute != t0.Add(9*time.Minute).Unix()/60 {
		t.Fatalf("frontier %+v, want the clock's due minute (t0 + 9 min)", f)
	}
}

// A database that the migrations create starts the rollup's frontier before every row (minute 0, as SQLite's
// empty file does), so that the first rows are counted once their minute is over, not one statement at a time
// by their writers' triggers; a database upgraded to the frontier keeps it two minutes ahead of the clock, for
// an older release's writer that may be waiting with a row of this minute.
func TestPostgresFrontierStartOfAFreshDatabase(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	fresh := openStore(t, "postgres").(*postgresStore)
	if f := frontierOf(t, fresh); f != (rollup.Frontier{}) {
		t.Fatalf("a fresh database's frontier %+v, want minute 0", f)
	}
	now := time.Now()
	mustWrite(t, fresh, newExec("fresh", 0, now))
	var cells int
	if err := fresh.pool.QueryRow(ctx, `SELECT COUNT(*) FROM EXECUTION_STATS_MINUTE`).Scan(&cells); err != nil {
		t.Fatal(err)
	}
	if cells != 0 {
		t.Errorf("a row of this minute wrote %d cells as it was written, want 0 (counted once its minute is over)", cells)
	}
	got, err := fresh.JobStats(ctx, StatsQuery{Job: "fresh", From: now.Truncate(time.Minute), To: now.Truncate(time.Minute).Add(time.Minute), Bucket: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Buckets) != 1 || got.Buckets[0].Items != 1 {
		t.Errorf("stats %+v, want the row's item counted beside the cells", got.Buckets)
	}

	dsn := newDSN(t, "postgres")
	migrateTo(t, "postgres", dsn, pgFrontierMigration-1)
	soon := time.Now().Unix()/60 + 2 // read before the migration: its clock is as late or later
	upgraded := openDSN(t, dsn).(*postgresStore)
	if f := frontierOf(t, upgraded); f.Minute < soon || f.Job != "" {
		t.Errorf("an upgraded database's frontier %+v, want minute %d or later (two ahead of the clock)", f, soon)
	}
}

// A step of the frontier's advance (ejs_rollup_step) moves it only from where its caller planned it: a step
// from a frontier another peer has moved since counts nothing and moves nothing, and a move to the next minute
// stays put while the minute has rows after the frontier (written since the plan was read). Each answers with
// the frontier as it is, and the advance goes on from there.
func TestPostgresRollupStepMovesOnlyFromItsPlan(t *testing.T) {
	t.Parallel()
	s := openStore(t, "postgres").(*postgresStore)
	noAdvance(s) // the writes leave the frontier at minute 0: the steps below move it
	m := t0.Unix() / 60
	mustWrite(t, s, newExec("a", 0, t0.Add(time.Second)), newExec("b", 0, t0.Add(2*time.Second)),
		newExec("c", 0, t0.Add(3*time.Minute)))
	steps, ctx := pgSteps{s.pool}, testCtx(t)
	due := m + 5
	at := func(want rollup.Frontier, counted int, n int, now rollup.Frontier, err error) {
		t.Helper()
		if err != nil || now != want || n != counted {
			t.Fatalf("step: at %+v, %d counted (%v); want %+v, %d", now, n, err, want, counted)
		}
		if f := frontierOf(t, s); f != want {
			t.Fatalf("frontier stored %+v, want %+v", f, want)
		}
		checkPGRollupTables(t, s, fmt.Sprintf("at %+v", want))
	}
	zero := rollup.Frontier{}
	now, err := steps.next(ctx, zero, due) // minute 0 has no rows: on to t0's minute
	at(rollup.Frontier{Minute: m}, 0, 0, now, err)
	// while another peer's step is under way (the steps' turn held), a step does nothing and the advance
	// leaves the frontier to that peer
	other, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Exec(ctx, pgRollupTurn); err != nil {
		t.Fatal(err)
	}
	if _, _, err := steps.count(ctx, rollup.Frontier{Minute: m}, "b"); !errors.Is(err, errAnotherAdvances) {
		t.Fatalf("a step during another's: %v, want errAnotherAdvances", err)
	}
	s.advanceRows = 100
	if err := s.advanceRollup(ctx, rollup.Frontier{Minute: m}); err != nil {
		t.Fatalf("an advance during another's step: %v", err)
	}
	s.advanceRows = 0
	at(rollup.Frontier{Minute: m}, 0, 0, rollup.Frontier{Minute: m}, other.Rollback(ctx))
	n, now, err := steps.count(ctx, zero, "b") // planned from a frontier that has moved since
	at(rollup.Frontier{Minute: m}, 0, n, now, err)
	now, err = steps.next(ctx, rollup.Frontier{Minute: m}, due) // a and b are there, after ''
	at(rollup.Frontier{Minute: m}, 0, 0, now, err)
	n, now, err = steps.count(ctx, rollup.Frontier{Minute: m}, "a")
	at(rollup.Frontier{Minute: m, Job: "a"}, 1, n, now, err)
	now, err = steps.next(ctx, rollup.Frontier{Minute: m, Job: "a"}, due) // b, written after a plan of a alone
	at(rollup.Frontier{Minute: m, Job: "a"}, 0, 0, now, err)
	n, now, err = steps.count(ctx, rollup.Frontier{Minute: m, Job: "a"}, "b")
	at(rollup.Frontier{Minute: m, Job: "b"}, 1, n, now, err)
	now, err = steps.next(ctx, rollup.Frontier{Minute: m, Job: "b"}, due) // on to c's minute
	at(rollup.Frontier{Minute: m + 3}, 0, 0, now, err)
	n, now, err = steps.count(ctx, rollup.Frontier{Minute: m + 3}, "c")
	at(rollup.Frontier{Minute: m + 3, Job: "c"}, 1, n, now, err)
	now, err = steps.next(ctx, rollup.Frontier{Minute: m + 3, Job: "c"}, due) // no row after: to due
	at(rollup.Frontier{Minute: due}, 0, 0, now, err)
	now, err = steps.next(ctx, rollup.Frontier{Minute: due}, due) // not before due: nothing to do
	at(rollup.Frontier{Minute: due}, 0, 0, now, err)
}
