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
func (s *postgresStore) WriteBatch(ctx context.Context, execs []ejserver.Execution, traces []ejserver.StatusTrace) error {
	if len(execs) == 0 {
		return s.WriteTraces(ctx, traces)
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := upsertExecutions(ctx, tx, execs); err != nil {
			return err
		}
		if len(traces) > 0 {
			if err := insertTraces(ctx, tx, traces); err != nil {
				return err
			}
		}
		return s.advanceRollup(ctx, tx)
	})
	return pgError("write history", err)
}
