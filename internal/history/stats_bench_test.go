package history

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
)

// seedStats writes n executions of job "big" over the 24 hours after t0 (one fire of 4 items every
// 4·24h/n), 5% failed, 1% misfires, on two peers, plus as many rows of 9 other jobs around them, so the
// stats of one job read 100,000 rows out of 200,000.
func seedStats(tb testing.TB, s Store, n int) {
	tb.Helper()
	ctx := context.Background()
	step := 24 * time.Hour / time.Duration(n/4)
	batch := make([]ejserver.Execution, 0, 2000)
	flush := func() {
		if err := s.WriteExecutions(ctx, batch); err != nil {
			tb.Fatal(err)
		}
		batch = batch[:0]
	}
	for i := range n {
		for _, job := range []string{"big", fmt.Sprintf("other-%d", i%9)} {
			sched := t0.Add(time.Duration(i/4) * step)
			e := newExec(job, i%4, sched.Add(time.Duration(i%97)*time.Millisecond))
			e.ScheduledAt = sched
			e.DurationMs = int64(10 + i%1000)
			e.CompletedAt = e.StartedAt.Add(time.Duration(e.DurationMs) * time.Millisecond)
			e.Success = i%20 != 0
			if i%100 == 0 {
				e.Source = ejserver.SourceMisfire
			}
			e.InstanceID = fmt.Sprintf("10.0.0.%d@-@1", i%2)
			batch = append(batch, e)
		}
		if len(batch) >= 2000 {
			flush()
		}
	}
	flush()
}

// BenchmarkJobStats100k is the job page's data over a window of 100,000 executions of one job (200,000
// rows in the table): the stats per 5-minute bucket with their percentiles, the 20,000 first chart points,
// and the cluster stats per minute over the same day. The "-rows" cases answer the same from the rows alone
// (no rollup), for an A/B in one run.
//
//	go test ./internal/history -run '^$' -bench BenchmarkJobStats100k -benchtime 10x
func BenchmarkJobStats100k(b *testing.B) {
	for _, kind := range storeKinds {
		s := openStore(b, kind)
		seedStats(b, s, 100_000)
		q := StatsQuery{Job: "big", From: t0, To: t0.Add(24 * time.Hour), Bucket: 5 * time.Minute}
		ctx := context.Background()
		b.Run(kind+"/job-stats", func(b *testing.B) {
			for b.Loop() {
				st, err := s.JobStats(ctx, q)
				if err != nil || st.Total.Items != 100_000 {
					b.Fatalf("%v %+v", err, st.Total)
				}
			}
		})
		run, d := rawRun(s)
		b.Run(kind+"/job-stats-rows", func(b *testing.B) {
			for b.Loop() {
				st, err := jobStats(ctx, run, d, q, false)
				if err != nil || st.Total.Items != 100_000 {
					b.Fatalf("%v %+v", err, st.Total)
				}
			}
		})
		b.Run(kind+"/job-points", func(b *testing.B) {
			for b.Loop() {
				p, err := s.JobPoints(ctx, q)
				if err != nil || len(p.Points) != MaxPoints {
					b.Fatalf("%v %d", err, len(p.Points))
				}
			}
		})
		b.Run(kind+"/cluster-stats", func(b *testing.B) {
			cq := q
			cq.Job, cq.Bucket = "", time.Minute
			for b.Loop() {
				st, err := s.ClusterStats(ctx, cq)
				if err != nil || st.Total.Items != 200_000 {
					b.Fatalf("%v %+v", err, st.Total)
				}
			}
		})
		b.Run(kind+"/cluster-stats-rows", func(b *testing.B) {
			cq := q
			cq.Job, cq.Bucket = "", time.Minute
			for b.Loop() {
				st, err := clusterStats(ctx, run, d, cq, false)
				if err != nil || st.Total.Items != 200_000 {
					b.Fatalf("%v %+v", err, st.Total)
				}
			}
		})
	}
}

// TestExplainStats prints the query plans of the job stats' statements over the 100,000-execution window, for
// docs/benchmarks.md: EJ_EXPLAIN=1 go test ./internal/history -run TestExplainStats -v
func TestExplainStats(t *testing.T) {
	if os.Getenv("EJ_EXPLAIN") == "" {
		t.Skip("EJ_EXPLAIN=1 prints the plans")
	}
	for _, kind := range storeKinds {
		s := openStore(t, kind)
		seedStats(t, s, 100_000)
		q := StatsQuery{Job: "big", From: t0, To: t0.Add(24 * time.Hour), Bucket: 5 * time.Minute}
		d, explain := sqliteDialect, "EXPLAIN QUERY PLAN "
		if kind == "postgres" {
			d, explain = postgresDialect, "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) "
			if _, err := s.(*postgresStore).pool.Exec(context.Background(), "ANALYZE"); err != nil {
				t.Fatal(err)
			}
		}
		ss := statsSQL{d: d}
		key := func(qq *query) string { return ss.bucketKey(qq, q) }
		dv, dc := ss.duration()
		for name, stmt := range map[string]*query{
			"counts":             ss.counts(q, span{q.From, q.To}, true, key),
			"duration histogram": ss.histogram(q, span{q.From, q.To}, true, func(*query) string { return "''" }, dv, dc),
		} {
			var lines []string
			run := s.(interface {
				run(context.Context, *query, func(rowScanner) error) error
			}).run
			plan := &query{d: d, args: stmt.args}
			plan.write(explain, stmt.String())
			err := run(context.Background(), plan, func(r rowScanner) error {
				if kind == "postgres" {
					var l string
					if err := r.Scan(&l); err != nil {
						return err
					}
					lines = append(lines, l)
					return nil
				}
				var id, parent, notused int
				var detail string
				if err := r.Scan(&id, &parent, &notused, &detail); err != nil {
					return err
				}
				lines = append(lines, detail)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s %s:\n%s\n%s", kind, name, stmt.String(), strings.Join(lines, "\n"))
		}
	}
}

// rawRun is the store's statement runner and dialect, to answer stats from the rows alone.
func rawRun(s Store) (runQuery, dialect) {
	if p, ok := s.(*postgresStore); ok {
		return p.run, postgresDialect
	}
	return s.(*sqliteStore).run, sqliteDialect
}
