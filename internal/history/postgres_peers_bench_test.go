package history

import (
	"context"
	"flag"
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
// With -peers.due N, a minute that is over holds N rows before the writers start, a row a job, that the
// frontier has not counted: the writes' advances count them as the writers write (a peer's minute at 100,000
// jobs is ~33,000 rows; three peers' is 100,000), and due-counted reports the share of them counted when the
// last write returned.
//
//	go test -c -o /tmp/h.test ./internal/history && /tmp/h.test -test.run '^$' \
//	    -test.bench BenchmarkPostgresPeersBatches -test.benchtime 60000x [-peers.due 100000]
func BenchmarkPostgresPeersBatches(b *testing.B) {
	const peers, batch, jobs = 3, 100, 3000
	ctx := context.Background()
	dsn := pg.NewDatabase(b)
	stores := make([]*postgresStore, peers)
	for i := range stores {
		stores[i] = openDSN(b, dsn).(*postgresStore)
	}
	dueMinute := writeDueMinute(b, stores[0], *peersDue)
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
		longest time.Duration
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
				took := time.Since(began)
				batches, spent, longest = batches+1, spent+took, max(longest, took)
				mu.Unlock()
				execs, traces = execs[:0], traces[:0]
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if *peersDue > 0 {
		b.ReportMetric(dueCounted(b, stores[0], dueMinute), "due-counted")
	}
	stopSampling()
	<-sampled
	if batches > 0 {
		b.ReportMetric(float64(spent.Milliseconds())/float64(batches), "ms/batch")
		b.ReportMetric(float64(longest.Milliseconds()), "max-ms/batch")
	}
	if samples > 0 {
		b.ReportMetric(float64(waits)/float64(samples), "waiters/sample")
	}
}

var peersDue = flag.Int("peers.due", 0, "BenchmarkPostgresPeersBatches: rows of a minute that is over, not yet counted, before the writers start")

// writeDueMinute writes n ended executions, a job each, into the minute two minutes before now, none of them
// counted (s's writes do not advance while it writes them), and returns that minute.
func writeDueMinute(b *testing.B, s *postgresStore, n int) int64 {
	b.Helper()
	at := time.Now().Add(-2 * time.Minute).Truncate(time.Minute)
	defer func(rows int) { s.advanceRows = rows }(s.advanceRows)
	s.advanceRows = 0
	recs := make([]ejserver.Execution, 0, 1000)
	for i := range n {
		recs = append(recs, newExec(fmt.Sprintf("due-%06d", i), 0, at.Add(time.Duration(i%60)*time.Second)))
		if len(recs) == cap(recs) || i == n-1 {
			if err := s.WriteExecutions(context.Background(), recs); err != nil {
				b.Fatal(err)
			}
			recs = recs[:0]
		}
	}
	return at.Unix() / 60
}

// dueCounted is the share of minute's rows that s's frontier has counted.
func dueCounted(b *testing.B, s *postgresStore, minute int64) float64 {
	b.Helper()
	var counted, all int
	err := s.pool.QueryRow(context.Background(), pgCounted+`SELECT COUNT(*) FILTER (WHERE m = $1),
		(SELECT COUNT(*) FROM JOB_EXECUTION_LOG WHERE start_time >= to_timestamp($1::bigint * 60)
			AND start_time < to_timestamp(($1::bigint + 1) * 60)) FROM counted`, minute).Scan(&counted, &all)
	if err != nil {
		b.Fatal(err)
	}
	return float64(counted) / float64(max(all, 1))
}
