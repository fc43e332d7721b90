package history

import (
	"database/sql"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestExplainPeerMaxReadsOneMinute checks on SQLite that a peer cell's largest duration and lateness, read
// again after a removal took them (migration 0013 dropped the job cells' indexes by largest value), are read
// off one minute's rows: a range of job_execution_log_start, covering, not the table nor every row.
func TestExplainPeerMaxReadsOneMinute(t *testing.T) {
	s := openStore(t, "sqlite").(*sqliteStore)
	seedStats(t, s, 2_000)
	for name, stmt := range map[string]string{"duration": sqlitePeerDurMax, "lateness": sqlitePeerLateMax} {
		plan := strings.Join(sqlitePlan(t, s, "EXPLAIN QUERY PLAN "+stmt, []any{rollupPeriod(t0, time.Minute), "10.0.0.7@-@4242", 0}), "\n")
		if !strings.Contains(plan, "SEARCH e USING COVERING INDEX job_execution_log_start (start_time>? AND start_time<?)") ||
			fullScan.MatchString(plan) || strings.Contains(plan, "TEMP B-TREE") {
			t.Errorf("plan of the peer's largest %s:\n%s\nwant a range of job_execution_log_start", name, plan)
		}
	}
}

// TestMigration13KeepsAHistory upgrades a file of schema version 12 that holds a history (random executions,
// written through the rollup) to version 13: every row and every rollup cell is still there, the two indexes
// are gone, and writing, replacing with shorter ends and pruning afterwards keep the rollup equal to its
// computation from the rows (the peers' largest values now read again off the rows).
func TestMigration13KeepsAHistory(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	dsn := filepath.Join(t.TempDir(), "history.db")
	r := rand.New(rand.NewPCG(13, 21))
	starts, later := randomHistory(r, 400)
	s := openDSN(t, dsn).(*sqliteStore)
	mustWrite(t, s, starts...)
	mustWrite(t, s, later[:len(later)/2]...)

	// back to version 12: its indexes, and no record of 13
	for _, stmt := range []string{
		"CREATE INDEX execution_stats_minute_peer_duration ON EXECUTION_STATS_MINUTE (minute, instance_id, dur_max)",
		"CREATE INDEX execution_stats_minute_peer_lateness ON EXECUTION_STATS_MINUTE (minute, instance_id, late_max)",
		"DELETE FROM schema_migrations WHERE version = 13",
	} {
		if _, err := s.w.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	before := tableCounts(t, s.r)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openDSN(t, dsn).(*sqliteStore)
	if n := countMigrations(t, "sqlite", dsn); n != 13 {
		t.Errorf("schema_migrations has %d rows, want 13", n)
	}
	var left int
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_schema WHERE name IN
		('execution_stats_minute_peer_duration', 'execution_stats_minute_peer_lateness')`).Scan(&left); err != nil || left != 0 {
		t.Errorf("indexes left after 0013: %d, %v", left, err)
	}
	if after := tableCounts(t, s.r); after != before {
		t.Errorf("rows before 0013 %v, after %v", before, after)
	}
	checkRollupTables(t, s, "migrated")

	mustWrite(t, s, later[len(later)/2:]...)
	checkRollupTables(t, s, "written after")
	var redo = later[:0:0]
	for j, e := range later {
		if j%3 == 0 && !e.CompletedAt.IsZero() {
			e.CompletedAt, e.DurationMs = e.CompletedAt.Add(time.Second), e.DurationMs/4
			redo = append(redo, e)
		}
	}
	mustWrite(t, s, redo...)
	checkRollupTables(t, s, "shorter ends")
	for {
		n, err := s.Prune(ctx, t0.Add(75*time.Minute+13*time.Second), 1+r.IntN(100))
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		checkRollupTables(t, s, "pruning")
	}
}

// tableCounts counts the rows of the executions and of each rollup table.
func tableCounts(t *testing.T, db *sql.DB) [7]int64 {
	t.Helper()
	var out [7]int64
	for i, table := range []string{"JOB_EXECUTION_LOG", "EXECUTION_STATS_MINUTE", "EXECUTION_FIRES_MINUTE",
		"EXECUTION_STATS_HIST", "EXECUTION_PEER_STATS_MINUTE", "EXECUTION_CLUSTER_FIRES_MINUTE", "EXECUTION_PEER_STATS_HIST"} {
		if err := db.QueryRowContext(testCtx(t), "SELECT COUNT(*) FROM "+table).Scan(&out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}
