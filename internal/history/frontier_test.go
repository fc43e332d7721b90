package history

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/history/rollup"
)

// TestMigration17StartsTheFrontierAfterTheRows upgrades a version-16 file holding a history (every row counted
// by its writes, as version 16 counted them): the frontier starts after the newest row, every cell stays, the
// stats answer as the rows; rows written after it, of minutes before the frontier and after it, are counted as
// they come or once their minute is over.
func TestMigration17StartsTheFrontierAfterTheRows(t *testing.T) {
	t.Parallel()
	dataHeavy(t)
	ctx := testCtx(t)
	r := rand.New(rand.NewPCG(17, 3))
	starts, later := randomHistory(r, 200)
	dsn := newDSN(t, "sqlite")
	s := openDSN(t, dsn).(*sqliteStore)
	mustWrite(t, s, starts...)
	mustWrite(t, s, later...)
	advanceRollupBy(t, s, 1<<20) // the system's clock: every minute of t0's history is over
	cells := tableCounts(t, s.r)
	var newest int64
	if err := s.r.QueryRowContext(ctx, "SELECT MAX(start_time) FROM JOB_EXECUTION_LOG").Scan(&newest); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{"DROP TABLE EXECUTION_ROLLUP_FRONTIER", "DELETE FROM schema_migrations WHERE version = 17"} {
		if _, err := s.w.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	s = reopenMigrated(t, s, dsn)
	f, err := readFrontier(ctx, s.r)
	if err != nil {
		t.Fatal(err)
	}
	if want := (rollup.Frontier{Minute: newest/60_000_000 + 1}); f != want {
		t.Fatalf("frontier after the migration: %+v, want %+v (after the newest row)", f, want)
	}
	if got := tableCounts(t, s.r); got != cells {
		t.Errorf("rows and cells after the migration: %v, before %v", got, cells)
	}
	checkRollupTables(t, s, "migrated")
	checkStatsAsRows(t, s, r, "migrated")

	// a clock two minutes after the newest row: an end of an item of the history (before the frontier) is
	// counted as it is written, new items (after it) once their minute is over
	clk := clock.NewFake(time.UnixMicro(newest).Add(2 * time.Minute))
	s.clock = clk
	var late ejserver.Execution
	for _, e := range later {
		if !e.CompletedAt.IsZero() {
			late = e
		}
	}
	late.CompletedAt, late.DurationMs = late.CompletedAt.Add(time.Second), late.DurationMs+1000
	fresh := newExec("pay", 0, time.UnixMicro(newest).Add(90*time.Second))
	fresh.ScheduledAt = fresh.StartedAt.Add(-time.Second)
	mustWrite(t, s, late, running(fresh))
	checkRollupTables(t, s, "a late end and a new item")
	if f, _ := readFrontier(ctx, s.r); f.Minute > fresh.StartedAt.Unix()/60 {
		t.Fatalf("the new item's minute counted before it is over: frontier %+v", f)
	}
	checkStatsAsRows(t, s, r, "a new item not counted")
	clk.Advance(2 * time.Minute)
	mustWrite(t, s, fresh)
	if f, _ := readFrontier(ctx, s.r); f.Minute <= fresh.StartedAt.Unix()/60 {
		t.Fatalf("the new item's minute not counted once over: frontier %+v", f)
	}
	checkRollupTables(t, s, "the new item counted")
	checkStatsAsRows(t, s, r, "the new item counted")
}

// TestAdvanceCountsAJobOverTheBudgetWhole: a minute where one job has more rows than a write counts is counted
// a job at a time, that job's rows together (a fire's rows of a minute never straddle the frontier).
func TestAdvanceCountsAJobOverTheBudgetWhole(t *testing.T) {
	t.Parallel()
	s := openStore(t, "sqlite").(*sqliteStore)
	s.clock, s.advanceRows = clock.NewFake(t0.Add(time.Hour)), 0
	sched := t0.Add(10 * time.Minute)
	var fire []ejserver.Execution
	for _, job := range []string{"a", "b", "c"} {
		items := map[string]int{"a": 2, "b": 9, "c": 1}[job]
		for item := range items {
			e := newExec(job, item, sched.Add(time.Duration(item)*time.Millisecond))
			e.ScheduledAt = sched
			fire = append(fire, e)
		}
	}
	mustWrite(t, s, fire...)
	want := []rollup.Frontier{
		{Minute: sched.Unix() / 60, Job: "a"}, // a's 2 rows fit 2; b's 9 do not
		{Minute: sched.Unix() / 60, Job: "b"}, // b alone, whole
		{Minute: sched.Unix()/60 + 1},         // c, the minute's last: the next minute
	}
	for i, w := range want {
		advanceRollupBy(t, s, 2)
		f, err := readFrontier(testCtx(t), s.r)
		if err != nil {
			t.Fatal(err)
		}
		checkRollupTables(t, s, "advancing")
		if i < 2 && f != w || i == 2 && f.Minute != t0.Add(time.Hour).Add(-rollupSettle).Unix()/60 {
			t.Fatalf("advance %d: frontier %+v, want %+v (then the clock's minute)", i+1, f, w)
		}
	}
	var fires int64
	if err := s.r.QueryRowContext(testCtx(t), "SELECT SUM(fires) FROM EXECUTION_CLUSTER_FIRES_MINUTE").Scan(&fires); err != nil || fires != 3 {
		t.Fatalf("fires counted: %d (%v), want one a job", fires, err)
	}
}

// TestAdvanceCountsRowsWrittenAfterItsPlan: a minute's chunks end where the jobs read at its first chunk say,
// and the rows written into the minute since are counted all the same: behind the frontier as they are
// written, between the plan's jobs with the chunk they fall in, after its last job when the plan is read again.
func TestAdvanceCountsRowsWrittenAfterItsPlan(t *testing.T) {
	t.Parallel()
	s := openStore(t, "sqlite").(*sqliteStore)
	s.clock, s.advanceRows = clock.NewFake(t0.Add(time.Hour)), 0
	at := t0.Add(10 * time.Minute)
	m := at.Unix() / 60
	write := func(jobs ...string) {
		for i, job := range jobs {
			mustWrite(t, s, newExec(job, 0, at.Add(time.Duration(i)*time.Second)))
		}
	}
	step := func(stage string, want rollup.Frontier) {
		t.Helper()
		advanceRollupBy(t, s, 2)
		if f, err := readFrontier(testCtx(t), s.r); err != nil || f != want {
			t.Fatalf("%s: frontier %+v (%v), want %+v", stage, f, err, want)
		}
		checkRollupTables(t, s, stage)
	}
	behind := func(want time.Duration) {
		t.Helper()
		if got, err := s.RollupBehind(testCtx(t)); err != nil || got != want {
			t.Fatalf("RollupBehind = %s (%v), want %s", got, err, want)
		}
	}
	behind(0) // no row
	write("b", "d", "f")
	behind(s.clock.Now().Sub(time.Unix((m+1)*60, 0).Add(rollupSettle))) // due since the minute's end and 30 s
	step("the plan b d f, two rows counted", rollup.Frontier{Minute: m, Job: "d"})
	write("c", "e", "g") // c behind the frontier, e between the plan's jobs, g after its last
	checkRollupTables(t, s, "rows written after the plan")
	step("f's chunk, with e", rollup.Frontier{Minute: m, Job: "f"})
	step("the plan read again: g, then the minute is over", rollup.Frontier{Minute: rollup.DueMinute(s.clock.Now(), rollupSettle)})
	behind(0)
}

// checkStatsAsRows fails t unless four random stats windows read through the rollup answer as the rows do.
func checkStatsAsRows(t *testing.T, s *sqliteStore, r *rand.Rand, stage string) {
	t.Helper()
	for range 4 {
		q := randomQuery(r)
		sameAnswer(t, stage+": cluster stats", q, s.ClusterStats, func(ctx context.Context, q StatsQuery) (ClusterStats, error) {
			return clusterStats(ctx, s.run, sqliteDialect, q, false, nil)
		})
		q.Job, q.Jobs = "pay", nil
		sameAnswer(t, stage+": job stats", q, s.JobStats, func(ctx context.Context, q StatsQuery) (JobStats, error) {
			return jobStats(ctx, s.run, sqliteDialect, q, false, nil)
		})
	}
}

// sameAnswer fails t unless got answers q as want does.
func sameAnswer[T any](t *testing.T, what string, q StatsQuery, got, want func(context.Context, StatsQuery) (T, error)) {
	t.Helper()
	g, err := got(testCtx(t), q)
	if err != nil {
		t.Fatal(err)
	}
	w, err := want(testCtx(t), q)
	if err != nil {
		t.Fatal(err)
	}
	if d := diff(w, g); d != "" {
		t.Fatalf("%s %s..%s, rollup against rows:\n%s", what, q.From, q.To, d)
	}
}

// TestExplainAdvanceReadsOneMinute checks on SQLite that the frontier's reads are ranges of an index: a minute's
// jobs and a chunk's rows (the minute's range of the start-ordered covering index), the next minute with rows.
func TestExplainAdvanceReadsOneMinute(t *testing.T) {
	t.Parallel()
	s := openStore(t, "sqlite").(*sqliteStore)
	seedStats(t, s, 200) // the reads name their index, or are a MIN of one
	m := rollupPeriod(t0, time.Minute)
	for _, c := range []struct {
		name, stmt, want string
		args             []any
	}{
		{"a minute's jobs", sqliteMinuteJobs, "SEARCH JOB_EXECUTION_LOG USING COVERING INDEX job_execution_log_start (start_time>? AND start_time<?)", []any{m, "m"}},
		{"a chunk's rows of a minute", sqliteMinuteRows, "SEARCH JOB_EXECUTION_LOG USING COVERING INDEX job_execution_log_start (start_time>? AND start_time<?)", []any{m, "m", "p"}},
		{"the next minute with rows", sqliteNextRowMinute, "SEARCH JOB_EXECUTION_LOG USING COVERING INDEX job_execution_log_start (start_time>?)", []any{m}},
	} {
		plan := strings.Join(sqlitePlan(t, s, "EXPLAIN QUERY PLAN "+c.stmt, c.args), "\n")
		if !strings.Contains(plan, c.want) || fullScan.MatchString(plan) {
			t.Errorf("plan of %s:\n%s\nwant %s", c.name, plan, c.want)
		}
	}
}
