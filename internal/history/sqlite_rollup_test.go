package history

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
)

// rollupFromRows are the rollup's tables computed from JOB_EXECUTION_LOG (migration 0009/0010's fills), each
// beside the stored table's query, without the hostname and ip (a cell keeps the largest it has seen, also
// of rows gone) and without the cells that are empty (a prune's cells wait for pruneRollup).
var rollupFromRows = []struct{ name, stored, rows string }{
	{"EXECUTION_STATS_MINUTE",
		`SELECT job_name, minute, instance_id, peer_fires, items, success, failure, running, misfire, failover, manual,
			dur_n, dur_sum, dur_max, late_n, late_sum, late_max FROM EXECUTION_STATS_MINUTE
			WHERE (items, peer_fires, success, failure, running, misfire, failover, manual, dur_n, dur_sum, late_n, late_sum)
			<> (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)`,
		`SELECT job_name, start_time / 60000000, instance_id, COUNT(DISTINCT scheduled_at), COUNT(*),
			SUM(complete_time IS NOT NULL AND is_success <> 0), SUM(complete_time IS NOT NULL AND is_success = 0),
			SUM(complete_time IS NULL), SUM(execution_source = 'MISFIRE'), SUM(execution_source = 'FAILOVER'),
			SUM(execution_source = 'MANUAL'), SUM(complete_time IS NOT NULL),
			COALESCE(SUM(CASE WHEN complete_time IS NOT NULL THEN duration_ms END), 0),
			MAX(CASE WHEN complete_time IS NOT NULL THEN duration_ms END), SUM(scheduled_at IS NOT NULL),
			COALESCE(SUM((start_time - scheduled_at) / 1000), 0), MAX((start_time - scheduled_at) / 1000)
		FROM JOB_EXECUTION_LOG GROUP BY 1, 2, 3`},
	{"EXECUTION_PEER_STATS_MINUTE",
		`SELECT minute, instance_id, peer_fires, items, success, failure, running, misfire, failover, manual,
			dur_n, dur_sum, dur_max, late_n, late_sum, late_max FROM EXECUTION_PEER_STATS_MINUTE
			WHERE (items, peer_fires, success, failure, running, misfire, failover, manual, dur_n, dur_sum, late_n, late_sum)
			<> (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)`,
		`SELECT minute, instance_id, SUM(f), SUM(items), SUM(success), SUM(failure), SUM(running), SUM(misfire),
			SUM(failover), SUM(manual), SUM(dur_n), SUM(dur_sum), MAX(dur_max), SUM(late_n), SUM(late_sum), MAX(late_max)
		FROM (SELECT job_name, start_time / 60000000 AS minute, instance_id, COUNT(DISTINCT scheduled_at) AS f,
			COUNT(*) AS items, SUM(complete_time IS NOT NULL AND is_success <> 0) AS success,
			SUM(complete_time IS NOT NULL AND is_success = 0) AS failure, SUM(complete_time IS NULL) AS running,
			SUM(execution_source = 'MISFIRE') AS misfire, SUM(execution_source = 'FAILOVER') AS failover,
			SUM(execution_source = 'MANUAL') AS manual, SUM(complete_time IS NOT NULL) AS dur_n,
			COALESCE(SUM(CASE WHEN complete_time IS NOT NULL THEN duration_ms END), 0) AS dur_sum,
			MAX(CASE WHEN complete_time IS NOT NULL THEN duration_ms END) AS dur_max,
			SUM(scheduled_at IS NOT NULL) AS late_n, COALESCE(SUM((start_time - scheduled_at) / 1000), 0) AS late_sum,
			MAX((start_time - scheduled_at) / 1000) AS late_max
			FROM JOB_EXECUTION_LOG GROUP BY 1, 2, 3) GROUP BY 1, 2`},
	{"EXECUTION_FIRES_MINUTE", `SELECT job_name, minute, fires FROM EXECUTION_FIRES_MINUTE WHERE fires <> 0`,
		`SELECT job_name, start_time / 60000000, COUNT(DISTINCT scheduled_at) AS n FROM JOB_EXECUTION_LOG
		GROUP BY 1, 2 HAVING n <> 0`},
	{"EXECUTION_CLUSTER_FIRES_MINUTE", `SELECT minute, fires FROM EXECUTION_CLUSTER_FIRES_MINUTE WHERE fires <> 0`,
		`SELECT minute, SUM(n) FROM (SELECT job_name, start_time / 60000000 AS minute, COUNT(DISTINCT scheduled_at) AS n
		FROM JOB_EXECUTION_LOG GROUP BY 1, 2) GROUP BY 1 HAVING SUM(n) <> 0`},
	{"EXECUTION_STATS_HIST", `SELECT job_name, hour, instance_id, kind, bin, n FROM EXECUTION_STATS_HIST WHERE n <> 0`,
		`SELECT job_name, hour, instance_id, kind, ` + binOf("v") + `, COUNT(*) FROM (
			SELECT job_name, start_time / 3600000000 AS hour, instance_id, 'd' AS kind, duration_ms AS v
			FROM JOB_EXECUTION_LOG WHERE complete_time IS NOT NULL
			UNION ALL
			SELECT job_name, start_time / 3600000000, instance_id, 'l', (start_time - scheduled_at) / 1000
			FROM JOB_EXECUTION_LOG WHERE scheduled_at IS NOT NULL) GROUP BY 1, 2, 3, 4, 5`},
	{"EXECUTION_PEER_STATS_HIST", `SELECT hour, instance_id, kind, bin, n FROM EXECUTION_PEER_STATS_HIST WHERE n <> 0`,
		`SELECT hour, instance_id, kind, ` + binOf("v") + `, COUNT(*) FROM (
			SELECT start_time / 3600000000 AS hour, instance_id, 'd' AS kind, duration_ms AS v
			FROM JOB_EXECUTION_LOG WHERE complete_time IS NOT NULL
			UNION ALL
			SELECT start_time / 3600000000, instance_id, 'l', (start_time - scheduled_at) / 1000
			FROM JOB_EXECUTION_LOG WHERE scheduled_at IS NOT NULL) GROUP BY 1, 2, 3, 4`},
}

// binOf is migration 0009's bin of v.
func binOf(v string) string {
	return "CASE WHEN " + v + " < 1000 THEN " + v + " WHEN " + v + " < 10000 THEN " + v + " / 10 * 10 WHEN " + v +
		" < 100000 THEN " + v + " / 100 * 100 WHEN " + v + " < 1000000 THEN " + v + " / 1000 * 1000 WHEN " + v +
		" < 10000000 THEN " + v + " / 10000 * 10000 WHEN " + v + " < 100000000 THEN " + v + " / 100000 * 100000 WHEN " + v +
		" < 1000000000 THEN " + v + " / 1000000 * 1000000 WHEN " + v + " < 10000000000 THEN " + v + " / 10000000 * 10000000 WHEN " + v +
		" < 100000000000 THEN " + v + " / 100000000 * 100000000 WHEN " + v + " < 1000000000000 THEN " + v +
		" / 1000000000 * 1000000000 ELSE " + v + " / 10000000000 * 10000000000 END"
}

// checkRollupTables fails t unless every rollup table of s equals its computation from the rows its frontier
// has counted.
func checkRollupTables(t *testing.T, s *sqliteStore, stage string) {
	t.Helper()
	f, err := readFrontier(testCtx(t), s.r)
	if err != nil {
		t.Fatal(err)
	}
	counted := fmt.Sprintf("FROM (SELECT * FROM JOB_EXECUTION_LOG WHERE start_time < %d OR start_time < %d AND job_name <= '%s')",
		f.Minute*60_000_000, (f.Minute+1)*60_000_000, strings.ReplaceAll(f.Job, "'", "''"))
	for _, c := range rollupFromRows {
		fromRows := strings.ReplaceAll(c.rows, "FROM JOB_EXECUTION_LOG", counted)
		for _, q := range []struct{ a, b, what string }{{c.stored, fromRows, "stored, not from the rows"}, {fromRows, c.stored, "from the rows, not stored"}} {
			rows, err := s.r.QueryContext(testCtx(t), "SELECT * FROM ("+q.a+") EXCEPT SELECT * FROM ("+q.b+") LIMIT 3")
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			cols, _ := rows.Columns()
			for rows.Next() {
				vals := make([]any, len(cols))
				ptrs := make([]any, len(cols))
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				if err := rows.Scan(ptrs...); err != nil {
					t.Fatal(err)
				}
				t.Errorf("%s: %s, %s: %v", stage, c.name, q.what, vals)
			}
			if err := rows.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestSQLiteRollupEqualsTheRows writes random histories through the per-batch rollup (start records, end
// records replacing them in the same batch or a later one, some moving their item to another minute and peer,
// heartbeats, shorter end records replacing longer ones, misfires and failovers) and prunes them in batches,
// and checks after each stage that every table of the rollup equals its computation from the rows.
//
// Every minute of the histories is over at once on the system's clock, so the writer's frontier counts each
// batch's minutes as they come (rollupAdvanceRows at a time); with seed 2026 the store's clock instead moves
// through the three hours as the batches are written, and the frontier counts 3 rows a write at most, so that
// it stops inside minutes, counts a job whose rows in a minute are over the budget on its own, and falls
// behind the batches: records then land on both sides of it.
func TestSQLiteRollupEqualsTheRows(t *testing.T) {
	t.Parallel()
	dataHeavy(t)
	for _, seed := range []uint64{1, 21, 2026} {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			t.Parallel()
			rollupEqualsTheRows(t, seed)
		})
	}
}

// rollupEqualsTheRows is TestSQLiteRollupEqualsTheRows with one seed.
func rollupEqualsTheRows(t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 11))
	starts, later := randomHistory(r, 600)
	s := openStore(t, "sqlite").(*sqliteStore)
	ctx := testCtx(t)
	all := append(append([]ejserver.Execution(nil), starts...), later...)
	var clk *clock.Fake
	batches := 0
	if seed == 2026 {
		clk = clock.NewFake(t0)
		s.clock, s.advanceRows = clk, 3
		// up to 48 jobs instead of 3, so that a minute has several jobs for a chunk to end between
		for i := range all {
			all[i].JobName += "-" + all[i].ID[len(all[i].ID)-1:]
		}
	}
	// batches of random sizes, records in random order: a start and its end meet in one batch or not
	for len(all) > 0 {
		n := min(len(all), 1+r.IntN(150))
		batch := all[:n]
		r.Shuffle(len(batch), func(i, j int) { batch[i], batch[j] = batch[j], batch[i] })
		if err := s.WriteExecutions(ctx, batch); err != nil {
			t.Fatal(err)
		}
		all = all[n:]
		if clk != nil {
			clk.Advance(time.Duration(r.Int64N(int64(25 * time.Minute))))
			if batches++; batches%3 == 0 { // every third: each check is a dozen aggregates of the table
				checkRollupTables(t, s, "writing")
			}
		}
	}
	checkRollupTables(t, s, "written")
	mustWrite(t, s, shorterEnds(later, 4, 3)...)
	checkRollupTables(t, s, "shorter ends")
	for _, cut := range []time.Duration{40 * time.Minute, 90*time.Minute + 17*time.Second, 4 * time.Hour} {
		for {
			n, err := s.Prune(ctx, t0.Add(cut), 1+r.IntN(300))
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				break
			}
			checkRollupTables(t, s, "pruning")
		}
	}
	var left int
	if err := s.r.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM EXECUTION_STATS_MINUTE").Scan(&left); err != nil || left != 0 {
		t.Errorf("cells left after pruning everything: %d, %v", left, err)
	}
}
