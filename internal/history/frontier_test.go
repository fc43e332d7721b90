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
// rows (the start-ordered covering index), one job's rows of a minute (the job's), the next minute with rows.
func TestExplainAdvanceReadsOneMinute(t *testing.T) {
	t.Parallel()
	s := openStore(t, "sqlite").(*sqliteStore)
	seedStats(t, s, 200) // the reads name their index, or are a MIN of one
	m := rollupPeriod(t0, time.Minute)
	for _, c := range []struct {
		name, stmt, want string
		args             []any
	}{
		{"a minute's rows", sqliteMinuteRows, "SEARCH JOB_EXECUTION_LOG USING COVERING INDEX job_execution_log_start (start_time>? AND start_time<?)", []any{m, "m", 2001}},
		{"a job's rows of a minute", sqliteJobMinuteRows, "SEARCH JOB_EXECUTION_LOG USING COVERING INDEX job_execution_log_job_start (job_name=? AND start_time>? AND start_time<?)", []any{m, "big"}},
		{"the next minute with rows", sqliteNextRowMinute, "SEARCH JOB_EXECUTION_LOG USING COVERING INDEX job_execution_log_start (start_time>?)", []any{m}},
	} {
		plan := strings.Join(sqlitePlan(t, s, "EXPLAIN QUERY PLAN "+c.stmt, c.args), "\n")
		if !strings.Contains(plan, c.want) || fullScan.MatchString(plan) {
			t.Errorf("plan of %s:\n%s\nwant %s", c.name, plan, c.want)
		}
	}
}
