package history

import (
	"strings"
	"testing"
	"time"
)

// TestPostgresExecutionIndexes checks PostgreSQL's indexes of the executions since 0022 (one job-ordered B-tree,
// job_execution_log_job_start; the fire index keyed by time first) and that each read still seeks one:
// a job's pages, every job's pages, a fire's items, and the fire's rows of one peer that 0009's triggers look
// for (they seeked job_execution_log_fire_peer before 0022), with sequential scans off (the table is small; the
// planner may still walk an index through a bitmap).
func TestPostgresExecutionIndexes(t *testing.T) {
	t.Parallel()
	dataHeavy(t)
	s := openStore(t, "postgres").(*postgresStore)
	ctx := testCtx(t)
	seedStats(t, s, 2_000)
	want := map[string]string{
		"job_execution_log_pkey":        "(id)",
		"job_execution_log_job_start":   "(job_name, start_time, id) INCLUDE (is_success, complete_time)",
		"job_execution_log_start":       "(start_time, id)",
		"job_execution_log_start_stats": "(start_time) INCLUDE (job_name, scheduled_at, duration_ms, is_success, complete_time, execution_source, instance_id, hostname, ip)",
		"job_execution_log_fire":        "(scheduled_at, job_name, start_time, id)",
	}
	rows, err := s.pool.Query(ctx, `SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'job_execution_log'`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for rows.Next() {
		var name, def string
		if err := rows.Scan(&name, &def); err != nil {
			t.Fatal(err)
		}
		got[name] = def
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for name, cols := range want {
		if !strings.HasSuffix(got[name], cols) {
			t.Errorf("index %s: %q, want it on %s", name, got[name], cols)
		}
	}
	for name, def := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("index %s (%s) is not one of the executions' indexes since 0022", name, def)
		}
	}

	type read struct {
		name, index, sql string
		args             []any
	}
	page := func(name, index string, f ExecutionFilter) read {
		q := listExecutions(postgresDialect, mustCheck(t, f))
		return read{name, index, q.String(), q.args}
	}
	fire := t0.Add(time.Hour).Truncate(time.Second)
	for _, r := range []read{
		page("a job's page", "job_execution_log_job_start", ExecutionFilter{JobName: "job-1"}),
		page("every job's page", "job_execution_log_start", ExecutionFilter{}),
		page("a fire's items", "job_execution_log_fire", ExecutionFilter{JobName: "job-1", ScheduledAt: fire}),
		{"a fire's rows of one peer (0009's triggers)", "job_execution_log_fire",
			`SELECT 1 FROM JOB_EXECUTION_LOG e WHERE e.job_name = $1 AND e.scheduled_at = $2 AND e.instance_id = $3
				AND e.start_time >= $4 AND e.start_time < $5`,
			[]any{"job-1", fire, "10.0.0.7@-@4242", fire, fire.Add(time.Minute)}},
	} {
		plan := strings.Join(postgresPlan(t, ctx, s, "EXPLAIN (COSTS OFF) "+r.sql, r.args, true), "\n") + "\n"
		if !strings.Contains(plan, "using "+r.index+" on") && !strings.Contains(plan, "Bitmap Index Scan on "+r.index+"\n") {
			t.Errorf("plan of %s:\n%s\nwant a seek of %s", r.name, plan, r.index)
		}
	}
}

func mustCheck(t *testing.T, f ExecutionFilter) checked {
	t.Helper()
	checked, err := f.check()
	if err != nil {
		t.Fatal(err)
	}
	return checked
}
