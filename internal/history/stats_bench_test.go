package history

import (
	"context"
	"fmt"
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
// and the cluster stats per minute over the same day (through the peers' level; "-job-level" through the
// jobs', as a token's scope does). The "-rows" cases answer the same from the rows alone (no rollup), for an
// A/B in one run.
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
				st, err := jobStats(ctx, run, d, q, false, nil)
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
		// the same through migration 0009's job level (a token scope that holds every job), for an A/B against
		// 0010's peer level in the same run
		b.Run(kind+"/cluster-stats-job-level", func(b *testing.B) {
			cq := q
			cq.Job, cq.Bucket, cq.Jobs = "", time.Minute, &JobSet{Prefixes: []string{"big", "other-"}}
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
				st, err := clusterStats(ctx, run, d, cq, false, nil)
				if err != nil || st.Total.Items != 200_000 {
					b.Fatalf("%v %+v", err, st.Total)
				}
			}
		})
	}
}

// rawRun is the store's statement runner and dialect, to answer stats from the rows alone.
func rawRun(s Store) (runQuery, dialect) {
	if p, ok := s.(*postgresStore); ok {
		return p.run, postgresDialect
	}
	return s.(*sqliteStore).run, sqliteDialect
}
