package history

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/ejserver/ejserver"
)

var _ BatchSink = (*postgresStore)(nil)

// WriteBatch writes executions and status traces in one transaction, with the rollup's frontier moved over
// the rows that are due: one commit (a WAL flush, with PostgreSQL's default synchronous_commit) where the
// executions and each BatchSize of traces were one each: a flush of 300 one-item tasks was three, one for
// its executions and two for their 900 traces (docs/benchmarks.md "the traces beside their executions").
//
// The traces go first. The executions' triggers take the rollup's advisory lock, which every peer's write of
// executions takes and holds to its commit: written after the executions, a flush's ~900 traces were
// written under it, and the peers' writers queued for it (docs/benchmarks.md "the rollup's lock").
func (s *postgresStore) WriteBatch(ctx context.Context, execs []ejserver.Execution, traces []ejserver.StatusTrace) error {
	if len(execs) == 0 {
		return s.WriteTraces(ctx, traces)
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if len(traces) > 0 {
			if err := insertTraces(ctx, tx, traces); err != nil {
				return err
			}
		}
		if err := upsertExecutions(ctx, tx, execs); err != nil {
			return err
		}
		return s.advanceRollup(ctx, tx)
	})
	return pgError("write history", err)
}
