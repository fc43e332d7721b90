package dispatch

import "context"

// jobContext is the context of a job's in-flight requests, cancelled by CancelJob (the job was disabled or
// deleted) or at the end of a drain. It is held only while the job has a request in flight: a context kept
// for every job that ever fired cost each peer ~0.25 KB a job (the cancelCtx, and the children map its
// first item's context left in it), ~5 MB at 20,000 jobs.
type jobContext struct {
	ctx    context.Context
	cancel context.CancelFunc
	users  int
}

// ctxFor returns the context of a job's requests and its release, to be called once when the request is
// over: the last release lets the context go.
func (e *Executor) ctxFor(job string) (context.Context, func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	jc := e.jobCtx[job]
	if jc == nil {
		ctx, cancel := context.WithCancel(e.hard)
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
			jc.cancel()
		}
	}
}
