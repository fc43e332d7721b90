package history

import (
	"context"
	"fmt"

	"github.com/ejserver/ejserver"
)

// writeTogether writes the next batch of pending executions and the next of pending status traces (up to
// BatchSize each) in one transaction, if the sink can (BatchSink). It reports whether it did: false with no
// error when the sink cannot, or when the store rejected the batch for a reason that is not transient (the
// records stay pending, for the per-table paths that retry them one by one). A transient error keeps them
// pending for the next attempt, as writeBatch does.
func (w *Writer) writeTogether(ctx context.Context) (bool, error) {
	bs, ok := w.sink.(BatchSink)
	if !ok {
		return false, nil
	}
	ne, nt := min(len(w.pendExecs), w.cfg.BatchSize), min(len(w.pendTraces), w.cfg.BatchSize)
	execs, waits, traces := w.pendExecs[:ne], w.pendWaits[:ne], w.pendTraces[:nt]
	err := writeOnce(w, ctx, execs, func(ctx context.Context, _ []ejserver.Execution) error {
		return bs.WriteBatch(ctx, execs, traces)
	})
	switch {
	case err == nil:
		w.account(ne+nt, 0)
		settle(waits, nil)
		w.pendExecs, w.pendWaits, w.pendTraces = w.pendExecs[ne:], w.pendWaits[ne:], w.pendTraces[nt:]
		return true, nil
	case transient(ctx, err):
		if w.Health().State == HealthDegraded {
			// the waiters are not held up by a store that is down: their records stay queued
			settle(w.pendWaits, fmt.Errorf("%w: %w", ErrNotCommitted, err))
			clear(w.pendWaits)
		}
		return false, err
	default:
		w.log.Warn("history store rejected a batch; retrying its records one by one", "count", ne+nt, "err", err)
		return false, nil
	}
}
