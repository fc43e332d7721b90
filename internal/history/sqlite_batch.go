package history

import (
	"context"
	"database/sql"

	"github.com/ejserver/ejserver"
)

// WriteBatch writes executions and status traces in one transaction: one commit, and the pages both
// tables' B-trees share (their upper levels, the time-ordered indexes' last leaves) written once.
func (s *sqliteStore) WriteBatch(ctx context.Context, execs []ejserver.Execution, traces []ejserver.StatusTrace) error {
	if len(execs) == 0 && len(traces) == 0 {
		return nil
	}
	return s.inTx(ctx, "write history", func(tx *sql.Tx) error {
		if len(execs) > 0 {
			if err := s.writeExecutions(ctx, tx, execs); err != nil {
				return err
			}
		}
		if len(traces) > 0 {
			return s.writeTraces(ctx, tx, traces)
		}
		return nil
	})
}
