package history

import (
	"context"
	"fmt"

	"github.com/ejserver/ejserver"
)

// tracesPerTask is how many status traces a task that ends writes: staging, running and its end.
const tracesPerTask = 3

// tracesBeside is how many status traces a transaction of ne executions takes at most: BatchSize, or a
// task's traces for each of its executions when that is more. Taken at BatchSize, a flush of one-item tasks
// (steady-10k: ~300 executions and ~900 traces) was a transaction of 300 executions and 500 traces, then one
// of the 400 traces left: the second commit, its statements and the pages both share written twice
// (docs/benchmarks.md "the traces beside their executions").
func (w *Writer) tracesBeside(ne int) int {
	return max(w.cfg.BatchSize, tracesPerTask*ne)
}

// writeTogether writes the next batch of pending executions (up to BatchSize) and the pending status traces
// beside them (up to tracesBeside) in one transaction, if the sink can (BatchSink). It reports whether it did: false with no
// error when the sink cannot, or when the store rejected the batch for a reason that is not transient (the
// records stay pending, for the per-table paths that retry them one by one). A transient error keeps them
// pending for the next attempt, as writeBatch does.
func (w *Writer) writeTogether(ctx context.Context) (bool, error) {
	bs, ok := w.sink.(BatchSink)
	if !ok {
		return false, nil
	}
	ne := min(len(w.pendExecs), w.cfg.BatchSize)
	nt := min(len(w.pendTraces), w.tracesBeside(ne))
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
