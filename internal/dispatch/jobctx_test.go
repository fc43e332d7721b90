package dispatch

import (
	"testing"
	"time"
)

// jobContexts is how many jobs hold a context.
func (e *Executor) jobContexts() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.jobCtx)
}

// TestExecutorHoldsAJobContextOnlyWhileItsItemsRun: a job's context lives while one of its items is in
// flight, and goes with the last (a context kept for every job that ever fired cost ~0.25 KB a job); one
// in flight is still cancelled by CancelJob.
func TestExecutorHoldsAJobContextOnlyWhileItsItemsRun(t *testing.T) {
	reg, send := newFakeRegistry(3), newFakeSender()
	release := send.holdItem(0)
	e := newTestExecutor(reg, send)
	defer e.Drain(time.Second)
	e.Fire("j", time.Unix(100, 0), 0)
	for range 3 {
		send.next(t)
	}
	if n := e.jobContexts(); n != 1 {
		t.Fatalf("%d job contexts while item 0 is in flight, want 1", n)
	}
	close(release)
	waitFor(t, func() bool { return e.jobContexts() == 0 })

	// a second fire's held item is cancelled by CancelJob, and its context goes with it
	send.mu.Lock()
	send.hold[1] = make(chan struct{}) // never released: only the cancel ends it
	send.mu.Unlock()
	e.Fire("j", time.Unix(110, 0), 0)
	for range 3 {
		send.next(t)
	}
	e.CancelJob("j")
	waitFor(t, func() bool { return e.jobContexts() == 0 && len(e.Running("j")) == 0 })
}
