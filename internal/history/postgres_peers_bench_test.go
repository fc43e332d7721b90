package history

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
)

// BenchmarkPostgresPeersBatches measures three peers' writers sharing one PostgreSQL database: each writes
// its flushes (100 one-item tasks: their executions and three status traces each, WriteBatch, the Writer's
// path) as fast as it can, its own jobs, at the current time, so the rollup's frontier advances as it does in
// a run. Every write of executions takes the rollup's advisory lock (0009's, in the executions'
// triggers) and holds it to its commit, so what a transaction does after taking it, the peers do one at a
// time. ns/op is per item, all peers together; it reports each batch's time (ms/batch) and how many peers'
// transactions were waiting for the lock, on average (waiters/sample: pg_locks, read every 20 ms).
//
//	go test -c -o /tmp/h.test ./internal/history && /tmp/h.test -test.run '^$' \
//	    -test.bench BenchmarkPostgresPeersBatches -test.benchtime 60000x
func BenchmarkPostgresPeersBatches(b *testing.B) {
	const peers, batch, jobs = 3, 100, 3000
	ctx := context.Background()
	dsn := pg.NewDatabase(b)
	stores := make([]*postgresStore, peers)
	for i := range stores {
		stores[i] = openDSN(b, dsn).(*postgresStore)
	}
	sampleCtx, stopSampling := context.WithCancel(ctx)
	var waits, samples int
	sampled := make(chan struct{})
	go func() { // the lock's waiters, sampled until the writers are done
		defer close(sampled)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-sampleCtx.Done():
				return
			case <-tick.C:
			}
			var n int
			if err := stores[0].pool.QueryRow(sampleCtx, `SELECT COUNT(*) `+pgAdvisoryWaiters).Scan(&n); err != nil {
				continue // the context ended mid-query
			}
			waits, samples = waits+n, samples+1
		}
	}()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		batches int
		spent   time.Duration
	)
	b.ResetTimer()
	for p := range peers {
		wg.Go(func() {
			execs := make([]ejserver.Execution, 0, batch)
			traces := make([]ejserver.StatusTrace, 0, 3*batch)
			for i := p; i < b.N; i += peers {
				var e ejserver.Execution
				e, traces = endedTask(fmt.Sprintf("peer%d-job-%04d", p, (i/peers)%jobs), time.Now(), traces)
				execs = append(execs, e)
				if len(execs) < batch && i+peers < b.N {
					continue
				}
				began := time.Now()
				if err := stores[p].WriteBatch(ctx, execs, traces); err != nil {
					b.Error(err)
					return
				}
				mu.Lock()
				batches, spent = batches+1, spent+time.Since(began)
				mu.Unlock()
				execs, traces = execs[:0], traces[:0]
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	stopSampling()
	<-sampled
	if batches > 0 {
		b.ReportMetric(float64(spent.Milliseconds())/float64(batches), "ms/batch")
	}
	if samples > 0 {
		b.ReportMetric(float64(waits)/float64(samples), "waiters/sample")
	}
}
