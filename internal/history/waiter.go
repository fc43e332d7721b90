package history

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/ejserver/ejserver"
)

// waiter is an EnqueueCommitted caller's wait for its record's commit: told once, by the writer (the record's
// fate) or by the end of the caller's context, whichever comes first. It holds no goroutine while it waits.
type waiter struct {
	then func(error)
	stop func() bool // stops the context's AfterFunc
	told atomic.Bool
}

func (wt *waiter) tell(err error) {
	if wt.told.CompareAndSwap(false, true) {
		wt.then(err)
	}
}

// EnqueueCommittedThen is EnqueueCommitted without waiting: it returns at once, and then gets the answer
// EnqueueCommitted would have returned, exactly once, on the Writer's goroutine, on one that ctx's end starts,
// or before EnqueueCommittedThen returns. then must not block: the Writer's other waiters wait for it. An
// item's end record is waited for this way (dispatch), so that through a restart at 100,000 jobs the
// thousands of items waiting for their commits hold no goroutine each (docs/benchmarks.md).
func (w *Writer) EnqueueCommittedThen(ctx context.Context, e ejserver.Execution, then func(error)) {
	wt := &waiter{then: then}
	wt.stop = context.AfterFunc(ctx, func() { wt.tell(fmt.Errorf("%w: %w", ErrNotCommitted, ctx.Err())) })
	switch queued, failing := w.enqueue(e, wt); {
	case !queued:
		wt.stop()
		wt.tell(fmt.Errorf("%w: queue full, dropped", ErrNotCommitted))
	case failing != nil: // degraded: no wait on a store that is down
		wt.stop()
		wt.tell(fmt.Errorf("%w: the store is failing (%s); the record stays queued", ErrNotCommitted, failing.LastError))
	}
}

// tellWaiter tells a record's waiter (if any) its fate.
func tellWaiter(wait *waiter, err error) {
	if wait != nil {
		wait.stop()
		wait.tell(err)
	}
}

// settle tells every waiter in waits the same fate.
func settle(waits []*waiter, err error) {
	for _, wt := range waits {
		tellWaiter(wt, err)
	}
}
