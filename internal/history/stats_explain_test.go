package history

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/history/rollup"
)

// explainQueries are the statements the stats run for the console's windows over seedStats' day: the job page
// (whole minutes, so through the rollup alone, and shifted by 30 s, so with the rows of the edges), and the
// cluster stats unscoped (the peers' level) and scoped to a token's jobs (the job level). They are recorded,
// not run.
func explainQueries(t *testing.T, d dialect) []namedQuery {
	t.Helper()
	var out []namedQuery
	record := func(name string) runQuery {
		return func(_ context.Context, q *query, _ func(rowScanner) error) error {
			out = append(out, namedQuery{fmt.Sprintf("%s #%d %s", name, len(out)+1, statsTable.FindString(q.String())), q})
			return nil
		}
	}
	ctx := context.Background()
	day := StatsQuery{Job: "big", From: t0, To: t0.Add(24 * time.Hour), Bucket: 5 * time.Minute}
	edges := day
	edges.From, edges.To = day.From.Add(30*time.Second), day.To.Add(30*time.Second)
	cluster := StatsQuery{From: t0, To: t0.Add(24 * time.Hour), Bucket: time.Minute}
	scoped := cluster
	scoped.Jobs = &JobSet{Prefixes: []string{"other-"}}
	// SQLite's rollup has counted the rows up to a job of the day's 20th hour: the rest are read as rows
	front := &rollup.Frontier{Minute: t0.Add(20*time.Hour+7*time.Minute).Unix() / 60, Job: "m"}
	for _, err := range []error{
		second(jobStats(ctx, record("job"), d, day, true, nil)),
		second(jobStats(ctx, record("job-edges"), d, edges, true, nil)),
		second(jobStats(ctx, record("job-uncounted"), d, day, true, front)),
		second(clusterStats(ctx, record("cluster"), d, cluster, true, nil)),
		second(clusterStats(ctx, record("cluster-scoped"), d, scoped, true, nil)),
		second(clusterStats(ctx, record("cluster-uncounted"), d, cluster, true, front)),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

type namedQuery struct {
	name string
	q    *query
}

func second[T any](_ T, err error) error { return err }

// statsTable is the table a stats statement reads.
var statsTable = regexp.MustCompile(`JOB_EXECUTION_LOG|EXECUTION_[A-Z_]+`)

// periodSeek is SQLite's seek of one period's cells of a job.
var periodSeek = regexp.MustCompile(`SEARCH EXECUTION_(STATS_MINUTE|FIRES_MINUTE|STATS_HIST) USING PRIMARY KEY \((minute|hour)=\? AND job_name=\?\)`)

// fullScan finds a plan line that reads a whole table (not a subquery's rows or a temporary B-tree):
// SQLite's "SCAN <table>" and PostgreSQL's "Seq Scan on <table>".
var fullScan = regexp.MustCompile(`(?i)(^|[^a-z])(SCAN|Seq Scan on) (job_execution_log|execution_[a-z_]+)\b`)

// TestExplainStats checks the query plans of the stats' statements (through the rollup, and the rows of a
// window's edges) on both stores: every table is read through an index (a range of its primary key or of an
// index), none in full. On SQLite the plans are the planner's choice; on PostgreSQL, whose planner may
// rightly scan a small table, the check runs with sequential scans off (an index can serve every read). With
// EJ_EXPLAIN=1 it seeds the benchmark's 200,000 rows instead and prints the plans for docs/benchmarks.md,
// PostgreSQL's as its planner chooses them after ANALYZE (unchecked: over a window that holds the whole
// table, as the benchmark's day does, a scan is its right choice):
//
//	EJ_EXPLAIN=1 go test ./internal/history -run TestExplainStats -v
func TestExplainStats(t *testing.T) {
	t.Parallel()
	dataHeavy(t)
	for l, scan := range map[string]bool{"SCAN JOB_EXECUTION_LOG": true, "  ->  Seq Scan on execution_peer_stats_hist": true,
		"SEARCH EXECUTION_STATS_HIST USING PRIMARY KEY (job_name=? AND hour>? AND hour<?)": false,
		"Index Scan using execution_stats_minute_pkey on execution_stats_minute":           false, "SCAN base": false} {
		if fullScan.MatchString(l) != scan {
			t.Fatalf("fullScan on %q: %v", l, !scan)
		}
	}
	full := os.Getenv("EJ_EXPLAIN") != ""
	n := 4_000
	if full {
		n = 100_000
	}
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			s := openStore(t, kind)
			seedStats(t, s, n)
			ctx := testCtx(t)
			d, explain := sqliteDialect, "EXPLAIN QUERY PLAN "
			plan := func(q *query) []string { return sqlitePlan(t, s.(*sqliteStore), explain+q.String(), q.args) }
			if kind == "postgres" {
				d, explain = postgresDialect, "EXPLAIN (COSTS OFF) "
				if full {
					explain = "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) "
				}
				plan = func(q *query) []string {
					return postgresPlan(t, ctx, s.(*postgresStore), explain+q.String(), q.args, !full)
				}
				if _, err := s.(*postgresStore).pool.Exec(ctx, "ANALYZE"); err != nil {
					t.Fatal(err)
				}
			}
			for _, nq := range explainQueries(t, d) {
				name, q := nq.name, nq.q
				lines := plan(q)
				for _, l := range lines {
					// PostgreSQL's own choice over the benchmark's day (all of its data) is rightly a scan
					if fullScan.MatchString(l) && (kind == "sqlite" || !full) {
						t.Errorf("%s %s reads a whole table: %q\n%s\n%s", kind, name, l, q, strings.Join(lines, "\n"))
					}
				}
				// SQLite's job level is keyed by its period first (0014): a job's cells are a seek a period,
				// not a range of every job's cells
				if kind == "sqlite" && strings.HasPrefix(name, "job") && strings.Contains(name, " EXECUTION_") &&
					!slices.ContainsFunc(lines, periodSeek.MatchString) {
					t.Errorf("%s %s does not seek each period's cells of the job:\n%s\n%s", kind, name, q, strings.Join(lines, "\n"))
				}
				if full {
					t.Logf("%s %s:\n%s\n%s", kind, name, q, strings.Join(lines, "\n"))
				}
			}
		})
	}
}

func sqlitePlan(t *testing.T, s *sqliteStore, stmt string, args []any) []string {
	t.Helper()
	rows, err := s.r.QueryContext(testCtx(t), stmt, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rows.Close() }()
	var lines []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

// postgresPlan explains stmt on one connection; noSeqScan turns sequential scans off for it.
func postgresPlan(t *testing.T, ctx context.Context, s *postgresStore, stmt string, args []any, noSeqScan bool) []string {
	t.Helper()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SET enable_seqscan = "+map[bool]string{true: "off", false: "on"}[noSeqScan]); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = conn.Exec(context.Background(), "RESET enable_seqscan") }()
	rows, err := conn.Query(ctx, stmt, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}
