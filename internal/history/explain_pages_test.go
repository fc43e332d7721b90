package history

import (
	"strings"
	"testing"
	"time"
)

// TestExplainExecutionPages checks on SQLite that the executions' pages are read in order through the indexes
// 0012 merged (job_execution_log_job_start for a job's, job_execution_log_start for all), without sorting:
// a page reads its rows and stops.
func TestExplainExecutionPages(t *testing.T) {
	t.Parallel()
	dataHeavy(t)
	s := openStore(t, "sqlite").(*sqliteStore)
	seedStats(t, s, 2_000)
	cur := cursor{start: micros(t0.Add(time.Hour)), id: "01900000-0000-7000-8000-000000000000"}.encode()
	from, to := t0, t0.Add(24*time.Hour)
	for _, c := range []struct {
		name  string
		f     ExecutionFilter
		index string
	}{
		{"a job's page", ExecutionFilter{JobName: "job-1"}, "job_execution_log_job_start"},
		{"a job's next page", ExecutionFilter{JobName: "job-1", Cursor: cur}, "job_execution_log_job_start"},
		{"a job's window", ExecutionFilter{JobName: "job-1", From: from, To: to}, "job_execution_log_job_start"},
		{"a job's failures", ExecutionFilter{JobName: "job-1", Success: new(false)}, "job_execution_log_job_start"},
		{"every job's page", ExecutionFilter{}, "job_execution_log_start"},
		{"every job's window", ExecutionFilter{From: from, To: to, Cursor: cur}, "job_execution_log_start"},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := listExecutions(sqliteDialect, mustCheck(t, c.f))
			lines := sqlitePlan(t, s, "EXPLAIN QUERY PLAN "+q.String(), q.args)
			plan := strings.Join(lines, "\n")
			// a page may walk its index in order ("SCAN ... USING INDEX"): it stops after the page's rows
			if !strings.Contains(plan, "INDEX "+c.index) || strings.Contains(plan, "TEMP B-TREE") ||
				strings.Contains(plan, "SCAN JOB_EXECUTION_LOG\n") || strings.HasSuffix(plan, "SCAN JOB_EXECUTION_LOG") {
				t.Errorf("plan of %s:\n%s\nwant it read in order through %s", q, plan, c.index)
			}
		})
	}
}
