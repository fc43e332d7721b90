package cluster

import (
	"context"
	"flag"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

var withdrawJobs = flag.Int("withdraw.jobs", 20_000, "BenchmarkWithdraw: the one-item jobs the three peers hold")

// BenchmarkWithdraw measures a stopping peer's withdrawal (Registry.Withdraw) where it matters, among peers
// that watch: three registries hold -withdraw.jobs one-item jobs (each peer owns about a third and leads those
// its campaigns win: the third led 5,500-13,500 of 30,000 in eight runs), the third stops and withdraws while
// the two others elect their leaders as its nodes go. It reports the nodes deleted a second, and the time from
// the withdrawal's start until both survivors see every job led by one of them with the stopped peer's
// instance gone (handed-over-s). ZooKeeper is the tests' shared server
// (EJ_ZK_HEAP sets its heap; ~15 nodes a job).
//
//	go test -run '^$' -bench BenchmarkWithdraw -benchtime 1x ./internal/cluster/ [-args -withdraw.jobs 50000]
func BenchmarkWithdraw(b *testing.B) {
	for range b.N {
		b.StopTimer()
		ns := zktest.Namespace("withdrawbench")
		ids := []string{"10.0.8.1@-@1", "10.0.8.2@-@2", "10.0.8.3@-@3"}
		peers := make([]*peer, len(ids))
		for i, id := range ids {
			peers[i] = startPeer(b, ns, id, fmt.Sprintf("10.0.8.%d", i+1))
		}
		jobs := createBenchJobs(b, peers, ids, *withdrawJobs)
		for _, p := range peers {
			waitAll(b, p, jobs, "every peer registered, a leader elected", func(s *JobSnapshot) bool {
				return s.Registered && s.Leader != "" && len(s.Instances) == len(ids)
			})
		}
		stopping, survivors := peers[2], peers[:2]
		stopping.r.Stop()
		b.StartTimer()
		start := time.Now()
		w, err := stopping.r.Withdraw(context.Background())
		took := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range survivors {
			waitAll(b, p, jobs, "led by a survivor, the stopped peer's instance gone", func(s *JobSnapshot) bool {
				_, there := s.Instances[ids[2]]
				return !there && s.Leader != "" && s.Leader != ids[2]
			})
		}
		handed := time.Since(start)
		b.StopTimer()
		b.ReportMetric(float64(w.Deleted)/took.Seconds(), "nodes/s")
		b.ReportMetric(float64(w.Deleted), "nodes")
		b.ReportMetric(float64(w.Multis), "multis")
		b.ReportMetric(handed.Seconds(), "handed-over-s")
		for _, p := range peers {
			p.close()
		}
	}
}

// createBenchJobs creates n one-item jobs, job k through peers[k%3] with its item owned by ids[k%3], 16 at a
// time.
func createBenchJobs(tb testing.TB, peers []*peer, ids []string, n int) []string {
	tb.Helper()
	jobs := make([]string, n)
	for k := range jobs {
		jobs[k] = fmt.Sprintf("w%06d", k)
	}
	var (
		next   atomic.Int64
		wg     sync.WaitGroup
		failed atomic.Pointer[error]
	)
	for range 16 {
		wg.Go(func() {
			for {
				k := int(next.Add(1) - 1)
				if k >= n || failed.Load() != nil {
					return
				}
				p := peers[k%len(peers)]
				if _, err := p.r.CreateJobSharded(testJob(jobs[k], 1), []string{ids[k%len(ids)]}); err != nil {
					failed.Store(&err)
				}
			}
		})
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		tb.Fatal(*err)
	}
	return jobs
}

// waitAll waits, for at most 5 minutes in all, until p's snapshot of every job satisfies cond.
func waitAll(tb testing.TB, p *peer, jobs []string, what string, cond func(*JobSnapshot) bool) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, j := range jobs {
		waitJobUntil(ctx, tb, p, j, what, cond)
	}
}
