package history

import (
	"database/sql"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestExplainPeerMaxReadsOneMinute checks on SQLite that a peer cell's largest duration and lateness, read
// again after a removal took them (migration 0013 dropped the job cells' indexes by largest value), are read
// off one minute's rows: a range of job_execution_log_start, covering, not the table nor every row.
func TestExplainPeerMaxReadsOneMinute(t *testing.T) {
	t.Parallel()
	dataHeavy(t)
	s := openStore(t, "sqlite").(*sqliteStore)
	seedStats(t, s, 2_000)
	for name, stmt := range map[string]string{"duration": sqlitePeerDurMax, "lateness": sqlitePeerLateMax} {
		plan := strings.Join(sqlitePlan(t, s, "EXPLAIN QUERY PLAN "+stmt, []any{rollupPeriod(t0, time.Minute), "10.0.0.7@-@4242", 0, rollupPeriod(t0, time.Minute), "m"}), "\n")
		if !strings.Contains(plan, "SEARCH e USING COVERING INDEX job_execution_log_start (start_time>? AND start_time<?)") ||
			fullScan.MatchString(plan) || strings.Contains(plan, "TEMP B-TREE") {
			t.Errorf("plan of the peer's largest %s:\n%s\nwant a range of job_execution_log_start", name, plan)
		}
	}
}

// TestExplainFireRowsSeekTheFire checks on SQLite that the rollup's lookup of a fire's rows in a minute seeks
// the fire in job_execution_log_fire, keyed by the fire's time first since 0015.
func TestExplainFireRowsSeekTheFire(t *testing.T) {
	t.Parallel()
	dataHeavy(t)
	s := openStore(t, "sqlite").(*sqliteStore)
	seedStats(t, s, 2_000)
	arg := `[["big", ` + strconv.FormatInt(rollupPeriod(t0, time.Minute), 10) + `, ` + strconv.FormatInt(micros(t0), 10) + `]]`
	plan := strings.Join(sqlitePlan(t, s, "EXPLAIN QUERY PLAN "+sqliteFireRows, []any{arg}), "\n")
	if !strings.Contains(plan, "USING INDEX job_execution_log_fire (scheduled_at=? AND job_name=? AND start_time>? AND start_time<?)") ||
		fullScan.MatchString(plan) {
		t.Errorf("plan of a fire's rows:\n%s\nwant a seek of the fire in job_execution_log_fire", plan)
	}
}

// TestMigration15KeepsAHistory upgrades a file of schema version 14 to 15 (job_execution_log_fire keyed by the
// fire's time first): the rows are kept and the rollup, whose fire lookups read the index, stays equal to its
// computation from the rows.
func TestMigration15KeepsAHistory(t *testing.T) {
	t.Parallel()
	dataHeavy(t)
	migrationKeepsAHistory(t, 15, []string{
		"DROP INDEX job_execution_log_fire",
		"CREATE INDEX job_execution_log_fire ON JOB_EXECUTION_LOG (job_name, scheduled_at, start_time, id)",
	}, func(s *sqliteStore) {
		checkIndexColumns(t, s, "job_execution_log_fire", "(scheduled_at, job_name, start_time, id)")
	})
}

// checkIndexColumns checks that the index named index is on columns (its statement's end) after a migration.
func checkIndexColumns(t *testing.T, s *sqliteStore, index, columns string) {
	t.Helper()
	var stmt string
	if err := s.r.QueryRowContext(testCtx(t), `SELECT sql FROM sqlite_schema WHERE name = ?`, index).Scan(&stmt); err != nil ||
		!strings.HasSuffix(stmt, columns) {
		t.Errorf("%s after the migration: %q, want it on %s (%v)", index, stmt, columns, err)
	}
}

// TestMigration13KeepsAHistory upgrades a file of schema version 12 that holds a history (random executions,
// written through the rollup) to version 13: every row and every rollup cell is still there, the two indexes
// are gone, and writing, replacing with shorter ends and pruning afterwards keep the rollup equal to its
// computation from the rows (the peers' largest values now read again off the rows).
func TestMigration13KeepsAHistory(t *testing.T) {
	t.Parallel()
	dataHeavy(t)
	migrationKeepsAHistory(t, 13, []string{
		"CREATE INDEX execution_stats_minute_peer_duration ON EXECUTION_STATS_MINUTE (minute, instance_id, dur_max)",
		"CREATE INDEX execution_stats_minute_peer_lateness ON EXECUTION_STATS_MINUTE (minute, instance_id, late_max)",
	}, func(s *sqliteStore) {
		var left int
		if err := s.r.QueryRowContext(testCtx(t), `SELECT COUNT(*) FROM sqlite_schema WHERE name IN
			('execution_stats_minute_peer_duration', 'execution_stats_minute_peer_lateness')`).Scan(&left); err != nil || left != 0 {
			t.Errorf("indexes left after 0013: %d, %v", left, err)
		}
	})
}

// TestMigration14KeepsAHistory upgrades a file of schema version 13 (the job level of the rollup keyed by job
// first, with its period indexes) to 14: the cells are copied, keyed by their period first, the period
// indexes are gone, and the rollup stays equal to its computation from the rows as more is written, replaced
// and pruned.
func TestMigration14KeepsAHistory(t *testing.T) {
	t.Parallel()
	dataHeavy(t)
	migrationKeepsAHistory(t, 14, []string{
		`CREATE TABLE EXECUTION_STATS_MINUTE_J (job_name TEXT NOT NULL, minute INTEGER NOT NULL, instance_id TEXT NOT NULL,
			peer_fires INTEGER NOT NULL DEFAULT 0, items INTEGER NOT NULL DEFAULT 0, success INTEGER NOT NULL DEFAULT 0,
			failure INTEGER NOT NULL DEFAULT 0, running INTEGER NOT NULL DEFAULT 0, misfire INTEGER NOT NULL DEFAULT 0,
			failover INTEGER NOT NULL DEFAULT 0, manual INTEGER NOT NULL DEFAULT 0, dur_n INTEGER NOT NULL DEFAULT 0,
			dur_sum INTEGER NOT NULL DEFAULT 0, dur_max INTEGER, late_n INTEGER NOT NULL DEFAULT 0,
			late_sum INTEGER NOT NULL DEFAULT 0, late_max INTEGER, hostname TEXT NOT NULL DEFAULT '',
			ip TEXT NOT NULL DEFAULT '', PRIMARY KEY (job_name, minute, instance_id)) STRICT, WITHOUT ROWID`,
		`INSERT INTO EXECUTION_STATS_MINUTE_J (job_name, minute, instance_id, peer_fires, items, success, failure, running,
			misfire, failover, manual, dur_n, dur_sum, dur_max, late_n, late_sum, late_max, hostname, ip)
			SELECT job_name, minute, instance_id, peer_fires, items, success, failure, running, misfire, failover,
			manual, dur_n, dur_sum, dur_max, late_n, late_sum, late_max, hostname, ip FROM EXECUTION_STATS_MINUTE`,
		"DROP TABLE EXECUTION_STATS_MINUTE",
		"ALTER TABLE EXECUTION_STATS_MINUTE_J RENAME TO EXECUTION_STATS_MINUTE",
		"CREATE INDEX execution_stats_minute_minute ON EXECUTION_STATS_MINUTE (minute)",
		`CREATE TABLE EXECUTION_FIRES_MINUTE_J (job_name TEXT NOT NULL, minute INTEGER NOT NULL,
			fires INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (job_name, minute)) STRICT, WITHOUT ROWID`,
		"INSERT INTO EXECUTION_FIRES_MINUTE_J (job_name, minute, fires) SELECT job_name, minute, fires FROM EXECUTION_FIRES_MINUTE",
		"DROP TABLE EXECUTION_FIRES_MINUTE",
		"ALTER TABLE EXECUTION_FIRES_MINUTE_J RENAME TO EXECUTION_FIRES_MINUTE",
		"CREATE INDEX execution_fires_minute_minute ON EXECUTION_FIRES_MINUTE (minute)",
		`CREATE TABLE EXECUTION_STATS_HIST_J (job_name TEXT NOT NULL, hour INTEGER NOT NULL, instance_id TEXT NOT NULL,
			kind TEXT NOT NULL, bin INTEGER NOT NULL, n INTEGER NOT NULL DEFAULT 0,
			PRIMARY KEY (job_name, hour, instance_id, kind, bin)) STRICT, WITHOUT ROWID`,
		`INSERT INTO EXECUTION_STATS_HIST_J (job_name, hour, instance_id, kind, bin, n)
			SELECT job_name, hour, instance_id, kind, bin, n FROM EXECUTION_STATS_HIST`,
		"DROP TABLE EXECUTION_STATS_HIST",
		"ALTER TABLE EXECUTION_STATS_HIST_J RENAME TO EXECUTION_STATS_HIST",
		"CREATE INDEX execution_stats_hist_hour ON EXECUTION_STATS_HIST (hour)",
	}, func(s *sqliteStore) {
		rows, err := s.r.QueryContext(testCtx(t), `SELECT name, sql FROM sqlite_schema
			WHERE name IN ('EXECUTION_STATS_MINUTE', 'EXECUTION_FIRES_MINUTE', 'EXECUTION_STATS_HIST')
			OR name IN ('execution_stats_minute_minute', 'execution_fires_minute_minute', 'execution_stats_hist_hour')`)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = rows.Close() }()
		want := map[string]string{"EXECUTION_STATS_MINUTE": "PRIMARY KEY (minute, job_name, instance_id)",
			"EXECUTION_FIRES_MINUTE": "PRIMARY KEY (minute, job_name)",
			"EXECUTION_STATS_HIST":   "PRIMARY KEY (hour, job_name, instance_id, kind, bin)"}
		for rows.Next() {
			var name, stmt string
			if err := rows.Scan(&name, &stmt); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(stmt, want[name]) || want[name] == "" {
				t.Errorf("after 0014, %s: %s", name, stmt)
			}
			delete(want, name)
		}
		if len(want) != 0 {
			t.Errorf("tables missing after 0014: %v", want)
		}
	})
}

// migrationKeepsAHistory writes a history, takes the file back to the schema before version (the downgrade's
// statements, and no record of version), opens it again and checks that version's migration kept every row
// and cell (migrated checks the schema), then writes, replaces with shorter ends and prunes, checking the
// rollup against its computation from the rows after each step.
func migrationKeepsAHistory(t *testing.T, version int, downgrade []string, migrated func(*sqliteStore)) {
	ctx := testCtx(t)
	dsn := filepath.Join(t.TempDir(), "history.db")
	r := rand.New(rand.NewPCG(uint64(version), 21))
	starts, later := randomHistory(r, 400)
	s := openDSN(t, dsn).(*sqliteStore)
	mustWrite(t, s, starts...)
	mustWrite(t, s, later[:len(later)/2]...)

	for _, stmt := range append(downgrade, "DELETE FROM schema_migrations WHERE version = "+strconv.Itoa(version)) {
		if _, err := s.w.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	before := tableCounts(t, s.r)
	s = reopenMigrated(t, s, dsn)
	migrated(s)
	if after := tableCounts(t, s.r); after != before {
		t.Errorf("rows before %04d %v, after %v", version, before, after)
	}
	checkRollupTables(t, s, "migrated")

	mustWrite(t, s, later[len(later)/2:]...)
	checkRollupTables(t, s, "written after")
	mustWrite(t, s, shorterEnds(later, 3, 4)...)
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

// reopenMigrated closes s and opens the file at dsn again, which migrates it: every migration is then recorded.
func reopenMigrated(t *testing.T, s *sqliteStore, dsn string) *sqliteStore {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openDSN(t, dsn).(*sqliteStore)
	all, err := migrations("sqlite")
	if err != nil {
		t.Fatal(err)
	}
	if n, want := countMigrations(t, "sqlite", dsn), len(all); n != want {
		t.Errorf("schema_migrations has %d rows, want %d", n, want)
	}
	return s
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
