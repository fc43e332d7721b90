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
	backoff := endBackoffMin
	for try := 1; ; try++ {
		err := e.reg.EndItem(job, item, runningVersion, done, clearFailover)
		if err == nil {
			if try > 1 {
				e.log.Info("item's end recorded in the registry after a retry", "job", job, "item", item,
					"execution_id", done.ExecutionID, "tries", try)
			}
			return
		}
		if try == endRetries {
			e.log.Error("could not record the item's end in the registry; giving up", "job", job, "item", item,
				"execution_id", done.ExecutionID, "tries", try, "err", err)
			return
		}
		e.log.Warn("could not record the item's end in the registry; retrying", "job", job, "item", item,
			"execution_id", done.ExecutionID, "err", err, "next_in", backoff)
		if !clock.Sleep(e.clk, backoff, e.hard.Done()) {
			e.log.Warn("item's end not recorded in the registry: aborted", "job", job, "item", item, "execution_id", done.ExecutionID)
			return
		}
		backoff = min(2*backoff, endBackoffMax)
	}
}
