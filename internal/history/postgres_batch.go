package history

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/history/rollup"
)

var _ BatchSink = (*postgresStore)(nil)

// WriteBatch writes executions and status traces in one transaction, with one round trip (a pipeline: pgx's
// batch, an implicit transaction committed at its end). When the commit finds rows due, it wakes the store's
// advancer, which moves the rollup's frontier over them (postgres_advancer.go): the write does not wait for
// it. One commit (a WAL flush, with PostgreSQL's default synchronous_commit) where the executions and each
// BatchSize of traces were one each: a flush of 300 one-item tasks was three, one for its executions and two
// for their 900 traces (docs/benchmarks.md "the traces beside their executions").
//
// The traces go first. The executions' triggers take the rollup's advisory lock, which every peer's write of
// executions takes and holds to its commit: written after the executions, a flush's ~900 traces were
// written under it, and the peers' writers queued for it (docs/benchmarks.md "the rollup's lock"). In one
// round trip, the lock is held from the executions' statement to the commit while the server works, and never
// while this peer's next statement is on its way: at 100,000 jobs, on a host at 100 %, a peer sent its next
// statement up to 1.7 s late (docs/benchmarks.md "the rollup's lock, held only inside the server").
func (s *postgresStore) WriteBatch(ctx context.Context, execs []ejserver.Execution, traces []ejserver.StatusTrace) error {
	if len(execs) == 0 {
		return s.WriteTraces(ctx, traces)
	}
	b := &pgx.Batch{}
	if len(traces) > 0 {
		b.Queue(pgInsertTraces, traceArgs(traces)...)
	}
	b.Queue(pgUpsertExecutions, executionArgs(execs)...)
	b.Queue(pgFrontierRead) // under the lock: as this write leaves it
	f, err := readBatch(s.pool.SendBatch(ctx, b), b.Len())
	if err != nil {
		return pgError("write history", err)
	}
	if s.due(f) {
		s.advancer.wake()
	}
	return nil
}

// readBatch reads a write's n results, the last one the frontier, and closes br: the batch's transaction
// committed when it returns no error.
func readBatch(br pgx.BatchResults, n int) (f rollup.Frontier, err error) {
	for i := 0; i < n-1 && err == nil; i++ {
		_, err = br.Exec()
	}
	if err == nil {
		err = br.QueryRow().Scan(&f.Minute, &f.Job)
	}
	if cerr := br.Close(); err == nil { // Close returns the batch's first error again
		err = cerr
	}
	return f, err
}
