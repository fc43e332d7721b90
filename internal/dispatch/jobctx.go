package dispatch

import (
	"context"
	"errors"
)

// jobContext is what halts a job's deliveries between their requests (webhook.Delivery.Halt): cancelled by
// CancelJob (the job was disabled or deleted) or at the end of a drain. A request already sent is not
// aborted by it: the receiver may be doing the work, and the item records what it answers. It is held only
// while the job has an item on its way: a context kept
// for every job that ever fired cost each peer ~0.25 KB a job (the cancelCtx, and the children map its
// first item's context left in it), ~5 MB at 20,000 jobs.
type jobContext struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	users  int
}

// errJobHalted is the cause a disabled or deleted job's deliveries stop with.
var errJobHalted = errors.New("the job was disabled or deleted")

// ctxFor returns the context that halts a job's deliveries and its release, to be called once when the
// item is over: the last release lets the context go.
func (e *Executor) ctxFor(job string) (context.Context, func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	jc := e.jobCtx[job]
	if jc == nil {
		ctx, cancel := context.WithCancelCause(e.hard)
		jc = &jobContext{ctx: ctx, cancel: cancel}
		e.jobCtx[job] = jc
	}
	jc.users++
	return jc.ctx, func() {
		e.mu.Lock()
		jc.users--
		last := jc.users == 0
		if last && e.jobCtx[job] == jc { // CancelJob may have dropped it already
			delete(e.jobCtx, job)
		}
		e.mu.Unlock()
		if last {
			jc.cancel(nil)
		}
	}
}
