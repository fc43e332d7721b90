package dispatch

import (
	"time"

	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/cluster"
)

// endRetries bounds endItem's tries: its back-off doubles from 250 ms to 5 s, about two minutes in all.
const (
	endRetries    = 28
	endBackoffMin = 250 * time.Millisecond
	endBackoffMax = 5 * time.Second
)

// endItem records an item's end in the registry, again after a failure (the connection to ZooKeeper broke,
// say) until it is recorded, the executor is aborted, or the tries run out. A running node left behind by an
// end that failed once names an instance that is alive: no failover takes it, and a resharding waits for it,
// so that every fire of the job was skipped until the leadership moved (found by the nemesis soak). EndItem
// is safe to repeat: a running node already deleted, or rewritten by a failover, is left alone.
func (e *Executor) endItem(job string, item int, runningVersion int32, done cluster.Completed, clearFailover bool) {
	e.retryEnd(job, item, runningVersion, done, clearFailover, nil)
}

// retryEnd is endItem after a first try that failed with first (nil: none was made yet).
func (e *Executor) retryEnd(job string, item int, runningVersion int32, done cluster.Completed, clearFailover bool, first error) {
	tried := first != nil
	e.retryWrite("the item's end", func() error {
		if tried {
			tried = false
			return first
		}
		return e.reg.EndItem(job, item, runningVersion, done, clearFailover)
	}, func() []any { return []any{"job", job, "item", item, "execution_id", done.ExecutionID} })
}

// clearUnsent removes the running node created for an item that was then not sent, with endItem's retries:
// the session is often in doubt just then, and a node left behind stalls the item as an end left behind does
// (found by the nemesis soak: a fire prepared as a ZooKeeper node died kept two items "running" for minutes,
// until their peer died and a survivor re-POSTed, as a failover, requests that had never been sent).
func (e *Executor) clearUnsent(job string, item int) {
	e.retryWrite("the removal of an unsent item's running node", func() error { return e.reg.ClearStaleRunning(job, item, 0) },
		func() []any { return []any{"job", job, "item", item} })
}

// retryWrite runs a registry write until it lands, the executor is aborted, or endRetries tries ran out; its
// back-off doubles from endBackoffMin to endBackoffMax. It reports whether the write landed. Its lines' attrs
// are made only when a line is written: made for every item's end, they were a slice and two boxed strings
// per item, which nearly never logs.
func (e *Executor) retryWrite(what string, write func() error, lineAttrs func() []any) bool {
	backoff := endBackoffMin
	var attrs []any
	for try := 1; ; try++ {
		err := write()
		if err == nil {
			if try > 1 {
				e.log.Info(what+" recorded in the registry after a retry", append(attrs, "tries", try)...)
			}
			return true
		}
		if attrs == nil {
			attrs = lineAttrs()
		}
		if try == endRetries {
			e.log.Error("could not record "+what+" in the registry; giving up", append(attrs, "tries", try, "err", err)...)
			return false
		}
		e.log.Warn("could not record "+what+" in the registry; retrying", append(attrs, "err", err, "next_in", backoff)...)
		if !clock.Sleep(e.clk, backoff, e.hard.Done()) {
			e.log.Warn(what+" not recorded in the registry: aborted", attrs...)
			return false
		}
		backoff = min(2*backoff, endBackoffMax)
	}
}
