package dispatch

import (
	"context"
	"log/slog"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/webhook"
)

// itemTail is the rest of an item's run once its request has its answer: its end record committed to the
// history (within commitWait), then its end written to ZooKeeper (when the run records one), then its
// followers told, its metrics, its log line and its finish. Both waits are records, not goroutines
// (Recorder.EnqueueCommittedThen, Registry.EndItemThen): through a restart at 100,000 jobs a survivor's items
// waited seconds for them, thousands at once, each on a goroutine that held its request's stack
// (docs/benchmarks.md). The order is the one the run had when it waited on its goroutine: the history holds
// the end before ZooKeeper acknowledges it (docs/reliability.md), and the item is not finished here (a
// catch-up or a queued trigger may start) before ZooKeeper has its end.
type itemTail struct {
	e       *Executor
	req     fireRequest
	item    int
	rec     ejserver.Execution
	res     webhook.Result
	started time.Time
	// end is the item's end for ZooKeeper (when hasEnd: the run records one), runningVersion the running node
	// it holds
	end            cluster.Completed
	hasEnd         bool
	runningVersion int32
	finish         func() // last, once: the run's context and the item released, the executor's count done
}

// clearFailover is whether the item's end deletes its failover nodes: a failover run's does.
func (t *itemTail) clearFailover() bool { return t.req.source == ejserver.SourceFailover }

// run starts the tail: it returns at once.
func (t *itemTail) run() {
	t.e.recordEndThen(t.rec, t.recorded)
}

// recorded follows the end record's commit (or the end of the wait for it), on the history writer's goroutine.
func (t *itemTail) recorded() {
	if !t.hasEnd {
		go t.close()
		return
	}
	t.e.reg.EndItemThen(t.req.job, t.item, t.runningVersion, t.end, t.clearFailover(), func(err error) {
		if err == nil {
			go t.close()
			return
		}
		go func() {
			t.e.retryEnd(t.req.job, t.item, t.runningVersion, t.end, t.clearFailover(), err)
			t.close()
		}()
	})
}

// close ends the run on a goroutine of its own: its followers, metrics and log line may take time.
func (t *itemTail) close() {
	growDecideStack()
	defer t.finish()
	e, req, res := t.e, t.req, t.res
	e.followEnded(req, t.rec)
	lateness := t.started.Sub(req.sendAt())
	e.cfg.Observer.ItemDone(req.job, req.source, res.Success, lateness, res.Duration)
	status := "success"
	level := slog.LevelInfo
	if !res.Success {
		status, level = "failure", slog.LevelWarn
	}
	if !e.log.Enabled(context.Background(), level) {
		return // the line's attributes cost an allocation each: build them only for a line that is written
	}
	attrs := []any{"job", req.job, "item", t.item, "execution_id", t.rec.ID, "status", status,
		"http_status", res.StatusCode, "attempts", res.Attempts, "duration_ms", res.Duration.Milliseconds(), "source", string(req.source)}
	if !res.Success {
		attrs = append(attrs, "cause", res.FailureCause)
	}
	if res.Permanent {
		attrs = append(attrs, "permanent", true)
	}
	e.log.Log(context.Background(), level, "item "+status, attrs...)
}

// recordEndThen writes an item's end record and calls then once its commit is known (within commitWait), so
// that its end is acknowledged in ZooKeeper, where the other peers see it, only once the history holds it: a
// peer killed before that leaves the item running in ZooKeeper, where a failover finds it
// (docs/reliability.md). then must not block: it may run on the history writer's goroutine.
func (e *Executor) recordEndThen(rec ejserver.Execution, then func()) {
	ctx, cancel := context.WithTimeout(e.hard, commitWait)
	// what the warning names, not rec: a capture of the parameter moves the whole record to the heap
	job, item, id := rec.JobName, rec.ShardingItem, rec.ID
	e.cfg.Recorder.EnqueueCommittedThen(ctx, rec, func(err error) {
		cancel()
		if err != nil {
			e.unrecorded.Warn("job", job, "item", item, "execution_id", id, "err", err)
		}
		then()
	})
}

// recordEnd is recordEndThen that waits.
func (e *Executor) recordEnd(rec ejserver.Execution) {
	done := make(chan struct{})
	e.recordEndThen(rec, func() { close(done) })
	<-done
}
