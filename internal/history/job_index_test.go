package history

import (
	"strings"
	"testing"
)

// TestMigration19KeepsAHistory upgrades a file of schema version 18 (job_execution_log_job_start covering twelve
// columns) to 19 (five): the rows are kept and the rollup, whose largest values are read again off a job's rows
// through that index, stays equal to its computation from the rows as more is written, replaced and pruned.
func TestMigration19KeepsAHistory(t *testing.T) {
	t.Parallel()
	dataHeavy(t)
	migrationKeepsAHistory(t, 19, []string{
		"DROP INDEX job_execution_log_job_start",
		`CREATE INDEX job_execution_log_job_start ON JOB_EXECUTION_LOG (job_name, start_time, id, is_success,
			complete_time, scheduled_at, duration_ms, execution_source, instance_id, sharding_item, hostname, ip)`,
	}, func(s *sqliteStore) {
		checkIndexColumns(t, s, "job_execution_log_job_start", "(job_name, start_time, id, is_success, complete_time)")
	})
}

// TestJobListReadsTheJobIndexAlone checks on SQLite that the job list's reads of each listed job (its counts of
// the last hour and day, its newest row) seek the job's range of job_execution_log_job_start and read nothing
// else of the job's rows: 0019 narrowed the index and kept the columns they need in it. A page of 100 jobs
// firing every 10 s counts ~860,000 rows of the day; read through the table, each would be a page.
func TestJobListReadsTheJobIndexAlone(t *testing.T) {
	t.Parallel()
	dataHeavy(t)
	s := openStore(t, "sqlite").(*sqliteStore)
	seedStats(t, s, 2_000)
	for _, c := range []struct {
		name, stmt string
		args       []any
		want       string
	}{
		{"counts since", sqliteCountsSince, []any{`["job-1","job-2"]`, micros(t0)},
			"USING COVERING INDEX job_execution_log_job_start (job_name=? AND start_time>?)"},
		{"newest row", sqliteLastExecutions, []any{`["job-1","job-2"]`},
			"SEARCH e USING COVERING INDEX job_execution_log_job_start (job_name=?)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			lines := sqlitePlan(t, s, "EXPLAIN QUERY PLAN "+c.stmt, c.args)
			plan := strings.Join(lines, "\n")
			if !strings.Contains(plan, c.want) || strings.Contains(plan, "TEMP B-TREE FOR ORDER BY") {
				t.Errorf("plan:\n%s\nwant %q, without sorting", plan, c.want)
			}
		})
	}
}
