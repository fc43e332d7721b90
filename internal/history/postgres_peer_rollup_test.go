package history

import (
	"math/rand/v2"
	"testing"
)

// peerCellsFromJobCells are PostgreSQL's peer-level rollup tables beside their computation from the job-level
// ones, the empty cells left out (a prune's emptied cells wait for pruneRollup; hostname and ip keep the largest
// ever seen). The sums are cast back to BIGINT, so that a failure prints numbers.
var peerCellsFromJobCells = []struct{ name, stored, fromJobs string }{
	{"EXECUTION_PEER_STATS_MINUTE",
		`SELECT minute, instance_id, peer_fires, items, success, failure, running, misfire, failover, manual, dur_n,
			dur_sum, dur_max, late_n, late_sum, late_max FROM EXECUTION_PEER_STATS_MINUTE
			WHERE (items, peer_fires, success, failure, running, misfire, failover, manual, dur_n, dur_sum, late_n, late_sum)
			<> (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)`,
		`SELECT * FROM (SELECT minute, instance_id, SUM(peer_fires)::BIGINT AS peer_fires, SUM(items)::BIGINT AS items,
			SUM(success)::BIGINT AS success, SUM(failure)::BIGINT AS failure, SUM(running)::BIGINT AS running,
			SUM(misfire)::BIGINT AS misfire, SUM(failover)::BIGINT AS failover, SUM(manual)::BIGINT AS manual,
			SUM(dur_n)::BIGINT AS dur_n, SUM(dur_sum)::BIGINT AS dur_sum, MAX(dur_max), SUM(late_n)::BIGINT AS late_n,
			SUM(late_sum)::BIGINT AS late_sum, MAX(late_max)
		FROM EXECUTION_STATS_MINUTE GROUP BY 1, 2) j
		WHERE (items, peer_fires, success, failure, running, misfire, failover, manual, dur_n, dur_sum, late_n, late_sum)
			<> (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)`},
	{"EXECUTION_CLUSTER_FIRES_MINUTE", `SELECT minute, fires FROM EXECUTION_CLUSTER_FIRES_MINUTE WHERE fires <> 0`,
		`SELECT minute, SUM(fires)::BIGINT FROM EXECUTION_FIRES_MINUTE GROUP BY 1 HAVING SUM(fires) <> 0`},
	{"EXECUTION_PEER_STATS_HIST", `SELECT hour, instance_id, kind, bin, n FROM EXECUTION_PEER_STATS_HIST WHERE n <> 0`,
		`SELECT hour, instance_id, kind, bin, SUM(n)::BIGINT FROM EXECUTION_STATS_HIST GROUP BY 1, 2, 3, 4 HAVING SUM(n) <> 0`},
}

// TestPostgresPeerCellsAreTheSumOfTheirJobCells checks PostgreSQL's peer-level cells (migration 0020's statement
// triggers) against the job-level cells they sum, after the store's writes (start records, end records that
// replace them, shorter ends whose largest values must be read again) and after deletes and updates made
// straight on the job cells: the triggers' paths that the store's own prunes reach only with emptied cells.
func TestPostgresPeerCellsAreTheSumOfTheirJobCells(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(20, 26))
	starts, later := randomHistory(r, 600)
	s := openStore(t, "postgres").(*postgresStore)
	for j := 0; j < len(starts); j += 120 {
		mustWrite(t, s, starts[j:min(j+120, len(starts))]...)
	}
	for j := 0; j < len(later); j += 90 {
		mustWrite(t, s, later[j:min(j+90, len(later))]...)
	}
	mustWrite(t, s, shorterEnds(later, 4, 5)...)
	ctx := testCtx(t)
	check := func(stage string) {
		t.Helper()
		for _, c := range peerCellsFromJobCells {
			pgSameRows(t, s, "", stage, c.name, c.stored, c.fromJobs, "stored, not the job cells' sum",
				"the job cells' sum, not stored")
		}
	}
	check("written")
	var items int64
	err := s.pool.QueryRow(ctx, "SELECT SUM(items) FROM EXECUTION_PEER_STATS_MINUTE").Scan(&items)
	if err != nil || items != int64(len(starts)) {
		t.Fatalf("the peers' cells count %d items (%v), want %d", items, err, len(starts))
	}
	for _, stmt := range []string{
		`DELETE FROM EXECUTION_STATS_MINUTE WHERE job_name = 'mail' AND minute % 3 = 0`,
		`UPDATE EXECUTION_STATS_MINUTE SET dur_max = dur_max / 2, late_max = late_max - 1, items = items + 1
			WHERE job_name = 'pay' AND minute % 2 = 0`,
		`DELETE FROM EXECUTION_FIRES_MINUTE WHERE job_name = 'payroll' AND minute % 4 = 0`,
		`UPDATE EXECUTION_FIRES_MINUTE SET fires = fires + 2 WHERE job_name = 'mail'`,
		`DELETE FROM EXECUTION_STATS_HIST WHERE job_name = 'pay' AND kind = 'd'`,
		`UPDATE EXECUTION_STATS_HIST SET n = n + 1 WHERE job_name = 'mail' AND kind = 'l'`,
	} {
		tag, err := s.pool.Exec(ctx, stmt)
		if err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
		if tag.RowsAffected() == 0 {
			t.Fatalf("%s changed nothing: the history is too small to test it", stmt)
		}
	}
	check("changed straight on the job cells")
}

// pgSameRows fails t unless queries a and b (each after with, a WITH clause or "") give the same rows, naming
// table and stage and what each side's extra rows are (whatA: rows of a not in b; whatB: the other way).
func pgSameRows(t *testing.T, s *postgresStore, with, stage, table, a, b, whatA, whatB string) {
	t.Helper()
	for _, q := range []struct{ a, b, what string }{{a, b, whatA}, {b, a, whatB}} {
		rows, err := s.pool.Query(testCtx(t), with+"("+q.a+") EXCEPT ("+q.b+") LIMIT 3")
		if err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			t.Errorf("%s: %s, %s: %v", stage, table, q.what, vals)
		}
		if rows.Close(); rows.Err() != nil {
			t.Fatal(rows.Err())
		}
	}
}
