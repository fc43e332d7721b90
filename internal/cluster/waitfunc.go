package cluster

import (
	"context"
	"slices"
	"sync/atomic"

	"github.com/ejserver/ejserver"
)

// WaitFunc is Wait without a goroutine: fn is called once, with the first snapshot of the job that satisfies
// cond (and a nil error) or with Wait's error and the last snapshot looked at. While cond does not hold, the
// wait is a record on the job's entry, looked at again (on a goroutine of its own) at each change of the job,
// and ctx's timer: a fire waiting for its sharding through a restart at 100,000 jobs was a goroutine and its
// stack, ~33,000 of them a peer (418 MB of stacks, docs/benchmarks.md). fn runs on the caller's goroutine
// when cond holds at once, otherwise on the goroutine of the change or of ctx's end.
func (r *Registry) WaitFunc(ctx context.Context, name string, cond func(*JobSnapshot) bool, fn func(*JobSnapshot, error)) {
	w := &asyncWait{r: r, name: name, cond: cond, fn: fn}
	w.stop = context.AfterFunc(ctx, func() { w.finish(w.last.Load(), ctx.Err()) })
	w.check()
}

// asyncWait is one WaitFunc: done is set by whichever of the cond, the job's removal or ctx's end comes first.
type asyncWait struct {
	r    *Registry
	name string
	cond func(*JobSnapshot) bool
	fn   func(*JobSnapshot, error)
	stop func() bool
	last atomic.Pointer[JobSnapshot]
	done atomic.Bool
}

// check is one or more rounds of Wait's loop: it ends when fn was called or the wait is parked on the entry
// with no change since the snapshot it judged.
func (w *asyncWait) check() {
	r := w.r
	for !w.done.Load() {
		r.mu.RLock()
		e := r.jobs[w.name]
		r.mu.RUnlock()
		if e == nil {
			w.finish(nil, ejserver.Errorf(ejserver.ENOTFOUND, "job %q not found", w.name))
			return
		}
		e.mu.Lock()
		var snap *JobSnapshot
		gone := e.st.loaded && !e.st.hasConfig
		if e.st.loaded && e.st.hasConfig {
			snap = e.snapshotLocked(r.me)
		}
		gen := e.gen
		e.mu.Unlock()
		if gone {
			w.finish(nil, ejserver.Errorf(ejserver.ENOTFOUND, "job %q not found", w.name))
			return
		}
		if snap != nil {
			w.last.Store(snap)
			if w.cond(snap) {
				w.finish(snap, nil)
				return
			}
		}
		if snap == nil || !snap.ItemsSettled {
			r.expediteLoad(w.name)
		}
		e.mu.Lock()
		if e.gen == gen { // nothing changed since the snapshot: the next change looks again
			e.waiting = append(slices.DeleteFunc(e.waiting, func(x *asyncWait) bool { return x.done.Load() }), w)
			e.mu.Unlock()
			return
		}
		e.mu.Unlock()
	}
}

// finish calls fn once: the first of the cond, the job's removal and ctx's end.
func (w *asyncWait) finish(snap *JobSnapshot, err error) {
	if !w.done.CompareAndSwap(false, true) {
		return
	}
	w.stop()
	w.fn(snap, err)
}

// wakeLocked hands the waits parked on the entry to goroutines that look again (changedLocked).
func (e *jobEntry) wakeLocked() {
	for _, w := range e.waiting {
		if !w.done.Load() {
			go w.check()
		}
	}
	e.waiting = nil
}
